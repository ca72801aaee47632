"""The content-keyed observation cache (docs/cost.md): keys, entries, the store, why it missed,
and opening it for one run."""
