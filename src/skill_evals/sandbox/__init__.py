"""The trust boundary in one place: the bubblewrap command line and what it binds, the probe
that decides whether sandboxing is usable, the variables no child gets, and the credential
proxy that holds the real keys outside every sandbox (docs/sandbox.md)."""
