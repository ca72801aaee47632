"""The command line: click commands only. Each parses its options, builds one plan, calls the
pipeline, prints and exits."""
