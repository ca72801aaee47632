"""Built-in runners (docs/agents/): real agents run in isolation, and an offline simulation."""
