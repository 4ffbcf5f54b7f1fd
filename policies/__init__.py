"""What an operator may configure: YAML policies and their schema."""
