#!/usr/bin/env python3
"""Small configurations of the model families users bring, exported by
torch.onnx.export with reference test data (the model-zoo test).

Usage: zoo_models.py OUTDIR [--only NAME ...]

Writes OUTDIR/NAME/model.onnx and OUTDIR/NAME/test_data_set_0/ (inputs
input_K.pb, output output_0.pb) for each NAME: torchvision's own classes
(ResNet with basic and bottleneck blocks, MobileNetV2, MobileNetV3-small,
EfficientNet, ConvNeXt, Swin, ViT) built small, and a T5-style
encoder-decoder (nn.Transformer, pre-norm, token embeddings, a causal
decoder mask from torch.triu). Every parameter still constant gets seeded
noise (export_models.perturb_trivial_params), so a dropped bias shows. GPT,
BERT, the LSTM/GRU/RNN tagger and the UNet-style blocks come from
export_models.py. Needs Debian's python3-torch, python3-torchvision and
python3-onnx (run with /usr/bin/python3).
"""
import argparse
import os
import sys
import warnings

import torch
import torch.nn as nn
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import perturb_trivial_params  # noqa: E402

warnings.filterwarnings("ignore")


def images(n=4, size=32):
    return (torch.randn(n, 3, size, size),)


def resnet(block):
    from torchvision.models.resnet import ResNet, BasicBlock, Bottleneck
    if block == "basic":
        return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)
    return ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10, width_per_group=16)


def mobilenet_v2():
    from torchvision.models.mobilenetv2 import MobileNetV2
    return MobileNetV2(num_classes=10, width_mult=0.25)


def mobilenet_v3():
    from torchvision.models.mobilenetv3 import mobilenet_v3_small
    return mobilenet_v3_small(num_classes=10, width_mult=0.25)


def efficientnet():
    from torchvision.models.efficientnet import EfficientNet, MBConvConfig
    # expand ratio, kernel, stride, in, out, layers: B0's first three stages,
    # narrowed (squeeze-excitation and SiLU as in B0).
    stages = [MBConvConfig(1, 3, 1, 16, 8, 1), MBConvConfig(6, 3, 2, 8, 16, 1),
              MBConvConfig(6, 5, 2, 16, 24, 1)]
    return EfficientNet(stages, dropout=0.0, num_classes=10, last_channel=64)


def convnext():
    from torchvision.models.convnext import ConvNeXt, CNBlockConfig
    return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)],
                    num_classes=10)


def swin():
    from torchvision.models.swin_transformer import SwinTransformer
    # Patch 4, embedding 16, two stages of 2 blocks (2 and 4 heads), 4 x 4
    # windows: shifted windows, their masks (ScatterND, Mod) and merging.
    return SwinTransformer([4, 4], 16, [2, 2], [2, 4], [4, 4], num_classes=10)


def vit():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                             num_heads=2, hidden_dim=32, mlp_dim=64,
                             num_classes=10)


class T5Style(nn.Module):
    """An encoder-decoder over tokens: nn.Transformer (pre-norm), a shared
    embedding and a causal decoder mask."""

    def __init__(self, vocab=50, d=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.transformer = nn.Transformer(d, 4, 2, 2, 64, dropout=0.0,
                                          batch_first=True, norm_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        n = tgt.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf")), 1)
        return self.head(self.transformer(self.embed(src), self.embed(tgt),
                                          tgt_mask=mask))


# name -> (factory, inputs)
MODELS = {
    "resnet": (lambda: resnet("basic"), images),
    "resnet_bottleneck": (lambda: resnet("bottleneck"), images),
    "mobilenet_v2": (mobilenet_v2, images),
    "mobilenet_v3": (mobilenet_v3, images),
    "efficientnet": (efficientnet, images),
    "convnext": (convnext, images),
    "swin": (swin, images),
    "vit": (vit, images),
    "t5": (T5Style, lambda: (torch.randint(0, 50, (4, 12)),
                             torch.randint(0, 50, (4, 10)))),
}


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def export(name, outdir):
    factory, inputs = MODELS[name]
    torch.manual_seed(0)
    model = factory().eval()
    perturb_trivial_params(model)
    x = inputs()
    names = [f"input_{i}" for i in range(len(x))]
    with torch.no_grad():
        ref = model(*x)
    d = os.path.join(outdir, name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    saved, sys.stdout = sys.stdout, open(os.devnull, "w")
    try:
        torch.onnx.export(model, x, path, opset_version=14, input_names=names,
                          output_names=["output"])
    finally:
        sys.stdout.close()
        sys.stdout = saved
    for i, (t, n) in enumerate(zip(x, names)):
        write_tensor(os.path.join(data, f"input_{i}.pb"), t.numpy(), n)
    write_tensor(os.path.join(data, "output_0.pb"), ref.numpy(), "output")
    graph = onnx.load(path).graph
    ops = sorted({n.op_type for n in graph.node})
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {len(graph.node)} nodes, {params} params; ops: "
          + " ".join(ops))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--only", nargs="+", choices=list(MODELS))
    args = ap.parse_args(argv[1:])
    for name in args.only or list(MODELS):
        export(name, args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
