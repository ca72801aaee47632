"""Small runner programs used by the execution tests (run with sys.executable)."""
