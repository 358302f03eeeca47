"""A stand-in for torchvision where it is not installed, with just what
Horovod's examples/pytorch/pytorch_synthetic_benchmark.py takes from it:
``torchvision.models.vgg16`` and ``resnet50`` (scripts/horovod_bench.sh puts
this folder on PYTHONPATH only when ``import torchvision`` fails)."""
from . import models  # noqa: F401
