"""知行 Zhixing: the import name of the whole project.

The code lives at the top of the repository (`core/`, `app/`, `cli/`, `pages/`, `samples/`,
`.streamlit/`); this folder links to each, so every module imports as `zhixing.core…`,
`zhixing.app…`, `zhixing.cli…`, the same in a checkout as in the installed wheel, and nothing
claims a generic top-level name such as `core` or `app` beside other software.
"""
