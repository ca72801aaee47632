"""The CI gate over a repository (docs/ci.md): config, discovery, fingerprints, change detection,
GitHub outputs/summary/comment, plan/merge."""
