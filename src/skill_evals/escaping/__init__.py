"""The one rule for untrusted text shown anywhere: invisible characters and terminal escaping."""
