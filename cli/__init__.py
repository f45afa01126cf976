"""The `zhixing` command line: a front end beside the app (app/). It works through
core.service like the pages, except where an operator's command needs the store directly
(`kb list` counts, `user` management in serve.py)."""
