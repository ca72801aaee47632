"""The CI gate over a repository (SPEC §3): config, discovery, fingerprints, change detection,
GitHub outputs/summary/comment, plan/merge."""
