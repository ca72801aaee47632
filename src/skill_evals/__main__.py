"""`python -m skill_evals` = the `skill-evals` command."""

from .cli import main

if __name__ == "__main__":
    main()
