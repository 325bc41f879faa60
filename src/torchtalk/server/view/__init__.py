"""The web view: a page that draws graph-shaped answers, expands nodes with the same tools, and shows source.

- ``payload.py``: the JSON the page asks for (an answer with its picture, source lines);
- ``routes.py``: the routes under /view (page, static files, API), for ``torchtalk view`` and the HTTP server;
- ``serve.py``: ``torchtalk view``, a local server on 127.0.0.1;
- ``static/``: the page, its script and styles, and the vendored libraries with their licences
  (``static/vendor``; ``scripts/vendor_js.sh`` refreshes them from npm). Nothing is fetched at run time.

This package imports nothing at import time: the HTTP server imports ``routes`` from here.
"""
