"""`python -m jaxcap.predict`: the command is jaxcap/main/predict.py, its query jaxcap/meta/prediction.py."""

from jaxcap.main.predict import console, main  # noqa: F401  (`from jaxcap import predict; predict.main(...)`)

if __name__ == "__main__":
    console()
