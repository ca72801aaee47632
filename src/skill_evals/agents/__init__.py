"""Built-in runners (SPEC §2): real agents run in isolation, and an offline simulation."""
