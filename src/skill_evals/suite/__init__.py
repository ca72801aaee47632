"""The inputs: skills (load, hash, rules), catalogs, cases, the strict YAML/JSONL readers, NFKC and
bounded directory walks."""
