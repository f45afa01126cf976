"""Every piece of UI text, in one package: one module per page, plus the shell's.

UI text is Chinese first, with English where it helps (the seed users are Chinese teams). Pages
import their module (`from app.strings import build as T`) and never spell UI text inline.
"""
