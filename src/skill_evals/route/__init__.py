"""`skill-evals route`: which skill does an agent pick when the whole catalog is installed
(docs/routing.md).

The pipeline: catalog.py (the skills) and cases.py (routing cases) are loaded, pipeline.py plans
and runs the invocations through the engine's scheduler (execute.py), metrics.py scores them,
report.py builds the report and its exit code, and the render_*.py modules print it. lint.py
checks a catalog and its cases without running anything.
"""
