"""`python -m skill_evals` = the `skill-evals` command."""

from .entry import main

if __name__ == "__main__":
    main()
