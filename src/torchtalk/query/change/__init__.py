"""The ``affected`` tool: from a change (diff text, a git revision, or names) to what it reaches and the
tests to run. One pipeline, one module per role, in the order data flows:

- ``diff.py``: unified diff text as files and hunks (reads nothing else); definitions named in changed text.
- ``lines.py``: the change as files and changed lines of the indexed tree (which side of the diff the tree holds).
- ``definitions.py``: changed lines to changed definitions, registrations, op entries, tests and OpInfo entries.
- ``generators.py``: a changed code generator or template as the generated layers it writes.
- ``reach.py``: one walk up the graph from everything changed; the ops reached and the answer.
- ``python.py``: nn modules and optimizers the change reaches (by the names their code calls).
- ``tests.py``: the tests to run, ranked, each with why and a command.
- ``result.py``: the answer's types; ``affected.py``: the tool's entry point.

Git I/O is source/git.py's; the kinds (status, file kind, side, device, aspect...) are model/change.py's.
"""
