"""The report data and its renderers (JSON, text, Markdown, JUnit, HTML), for test and route."""
