"""``python -m memfs.cli``: the same as the ``memfs`` console script."""

from memfs.cli import main

if __name__ == "__main__":
    main()
