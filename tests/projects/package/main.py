"""A package: argparse here, the training in trainer.loop (relative imports below it)."""
import argparse

from trainer import loop


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.001)
    return p.parse_args()


if __name__ == "__main__":
    loop.run(parse_args())
