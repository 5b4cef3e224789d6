#!/usr/bin/env python3
"""Write malformed (and a few deliberately valid) ONNX inputs for importer tests.

Usage: make_bad_inputs.py OUTDIR

Every file is written with model.SerializeToString() directly, bypassing
onnx.checker / onnx.save, because most of them are invalid on purpose.

OUTDIR/expected.txt lists, one line per model file,
    FILENAME<TAB>SUBSTRING
where SUBSTRING is a short lowercase phrase the importer's error message must
contain (compare against the lowercased message), or `OK` when the importer
must accept the file.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

IR_VERSION = 8
OPSET = 14


def opset(version=OPSET, extra=()):
    return [helper.make_opsetid("", version)] + [
        helper.make_opsetid(d, v) for d, v in extra
    ]


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, initializers=(), name="g", opsets=None):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=opsets or opset(),
                          producer_name="pcc-bad-inputs")
    m.ir_version = IR_VERSION
    return m


def raw_tensor(name, dims, raw, elem=TensorProto.FLOAT):
    t = TensorProto()
    t.name = name
    t.data_type = elem
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def external_tensor(name, dims, location, offset=None, length=None,
                    elem=TensorProto.FLOAT):
    t = TensorProto()
    t.name = name
    t.data_type = elem
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for k, v in entries:
        e = t.external_data.add()
        e.key = k
        e.value = v
    return t


def matmul_model(w_tensor, k, n, name):
    return model(
        [helper.make_node("MatMul", ["x", w_tensor.name], ["y"], name="mm0")],
        [vi("x", [2, k])], [vi("y", [2, n])], [w_tensor], name=name)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: make_bad_inputs.py OUTDIR\n")
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1234)
    expected = []

    def write_bytes(fname, data, substring):
        with open(os.path.join(out, fname), "wb") as f:
            f.write(data)
        expected.append((fname, substring))

    def write_model(fname, m, substring):
        write_bytes(fname, m.SerializeToString(), substring)

    # --- not protobuf at all -------------------------------------------------
    write_bytes("empty.onnx", b"", "empty")
    write_bytes("random.onnx", rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(),
                "failed to parse")
    # Starts with 'N' (0x4E = field 9, wire type 6, which does not exist) so
    # every protobuf parser rejects it at the first byte. A sentence starting
    # with e.g. 'T' (0x54 = end-group tag) is silently accepted as an empty
    # message by some protobuf runtimes.
    write_bytes("text.onnx",
                b"Not an ONNX model: this file is just a plain English sentence.\n",
                "failed to parse")

    # --- truncated valid model (~10 KB, mostly one initializer) --------------
    w = rng.standard_normal((50, 50)).astype(np.float32)
    full = matmul_model(raw_tensor("w", [50, 50], w.tobytes()), 50, 50,
                        "truncated").SerializeToString()
    write_bytes("truncated.onnx", full[: len(full) // 2], "failed to parse")

    # --- unsupported / unknown ops ------------------------------------------
    write_model("unsupported_op.onnx", model(
        [helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"],
                          name="nms0")],
        [vi("boxes", [1, 6, 4]), vi("scores", [1, 1, 6])],
        [vi("sel", [None, 3], TensorProto.INT64)], name="unsupported_op"),
        "unsupported onnx op 'nonmaxsuppression'")

    # Every unsupported op in one error: each type with its count, the
    # first node of each, at the first one.
    write_model("unsupported_ops.onnx", model(
        [helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["s0"],
                          name="nms0"),
         helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["s1"],
                          name="nms1"),
         helper.make_node("Det", ["sq"], ["d"], name="det0")],
        [vi("boxes", [1, 6, 4]), vi("scores", [1, 1, 6]), vi("sq", [3, 3])],
        [vi("s0", [None, 3], TensorProto.INT64),
         vi("s1", [None, 3], TensorProto.INT64), vi("d", [])],
        name="unsupported_ops"),
        "unsupported onnx ops: 'nonmaxsuppression' (opset " + str(OPSET) +
        ") x2, 'det' (opset " + str(OPSET) + ") x1 (first at node 'det0') "
        "at node 'nms0'")

    # A node name with a newline and a control byte must still give one
    # printable error line.
    write_model("unprintable_name.onnx", model(
        [helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"],
                          name="bad\nname\x01")],
        [vi("boxes", [1, 6, 4]), vi("scores", [1, 1, 6])],
        [vi("sel", [None, 3], TensorProto.INT64)], name="unprintable_name"),
        "at node 'bad name\\x01'")

    write_model("custom_domain.onnx", model(
        [helper.make_node("MyOp", ["x"], ["y"], name="custom0",
                          domain="com.example")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], name="custom_domain",
        opsets=opset(extra=[("com.example", 1)])),
        "'com.example'")

    # --- graph-structure / shape errors -------------------------------------
    write_model("incompatible_shapes.onnx", model(
        [helper.make_node("Add", ["a", "b"], ["c"], name="add0")],
        [vi("a", [2, 3]), vi("b", [4, 5])], [vi("c", [2, 3])],
        name="incompatible_shapes"),
        "at node 'add0'")

    write_model("undefined_input.onnx", model(
        [helper.make_node("Relu", ["ghost"], ["y"], name="relu0")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], name="undefined_input"),
        "'ghost'")

    write_model("cycle.onnx", model(
        [helper.make_node("Add", ["x", "b"], ["a"], name="n0"),
         helper.make_node("Relu", ["a"], ["b"], name="n1")],
        [vi("x", [2, 3])], [vi("b", [2, 3])], name="cycle"),
        "cycle")

    write_model("overflow_dims.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", [4294967296, 4294967296, 16])],
        [vi("y", [4294967296, 4294967296, 16])], name="overflow_dims"),
        "overflow")

    write_model("negative_dim.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", [-3, 4])], [vi("y", [-3, 4])], name="negative_dim"),
        "negative")

    # --- initializer data errors --------------------------------------------
    write_model("initializer_size_mismatch.onnx", matmul_model(
        raw_tensor("w", [4, 4], b"\0" * 12), 4, 4, "initializer_size_mismatch"),
        "initializer 'w'")

    write_model("huge_initializer.onnx", model(
        [helper.make_node("Identity", ["big"], ["y"], name="id0")],
        [], [vi("y", [100000, 100000, 100])],
        [raw_tensor("big", [100000, 100000, 100], b"\0" * 16)],
        name="huge_initializer"),
        "initializer 'big'")

    write_model("opset_too_new.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], name="opset_too_new",
        opsets=opset(99)),
        "opset 99")

    # --- external data (both valid; OK) -------------------------------------
    # Weight lives in a file that does not exist: fine for shape-only planning.
    write_model("missing_external.onnx", matmul_model(
        external_tensor("w", [8, 4], "absent.bin", 0, 8 * 4 * 4), 8, 4,
        "missing_external"), "OK")

    # Real external data: external_ok.onnx + external_ok.bin (offset 16 to make
    # sure the offset field is honoured; the first 16 bytes are padding).
    w_ext = np.arange(32, dtype=np.float32).reshape(8, 4) / 8.0
    pad = b"PCC-EXT-PADDING!"
    assert len(pad) == 16
    with open(os.path.join(out, "external_ok.bin"), "wb") as f:
        f.write(pad + w_ext.tobytes())
    write_model("external_ok.onnx", matmul_model(
        external_tensor("w", [8, 4], "external_ok.bin", len(pad), w_ext.nbytes),
        8, 4, "external_ok"), "OK")

    # --- hostile models: reading outside the model's folder -----------------
    def ext_model(fname, location, substring, **kw):
        write_model(fname, matmul_model(
            external_tensor("w", [8, 4], location, **kw), 8, 4,
            fname.split(".")[0]), substring)

    ext_model("escape_dotdot.onnx", "../../../etc/passwd", "climbs out with '..'")
    ext_model("escape_absolute.onnx", "/etc/passwd", "absolute path")
    link = os.path.join(out, "escape_link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("/etc/passwd", link)
    ext_model("escape_symlink.onnx", "escape_link.bin",
              "outside the model's folder")
    fifo = os.path.join(out, "fifo.bin")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    ext_model("external_fifo.onnx", "fifo.bin", "not a regular file")
    bad_offset = external_tensor("w", [8, 4], "absent.bin")
    e = bad_offset.external_data.add()
    e.key, e.value = "offset", "abc"
    write_model("external_bad_offset.onnx",
                matmul_model(bad_offset, 8, 4, "external_bad_offset"),
                "not a non-negative integer")

    # --- hostile models: what crashed ONNX's shape inference ----------------
    conv_w = raw_tensor("w", [1, 1, 2, 2], np.ones(4, np.float32).tobytes())
    write_model("conv_zero_stride.onnx", model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv0",
                          strides=[0, 0])],
        [vi("x", [1, 1, 4, 4])], [vi("y", None)], [conv_w],
        name="conv_zero_stride"), "stride")
    write_model("avgpool_zero_stride.onnx", model(
        [helper.make_node("AveragePool", ["x"], ["y"], name="pool0",
                          kernel_shape=[2, 2], strides=[2, 0])],
        [vi("x", [1, 1, 4, 4])], [vi("y", None)], name="avgpool_zero_stride"),
        "stride")
    # ONNX's own inference dies on these (data propagation over an empty
    # shape); it runs in a child process, so pcc still imports them.
    write_model("onnx_inference_crash.onnx", model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add0")], [],
        [vi("y", None, TensorProto.INT64)],
        [raw_tensor("a", [0], b"", TensorProto.INT64),
         raw_tensor("b", [1], np.int64(1).tobytes(), TensorProto.INT64)],
        name="onnx_inference_crash"), "OK")
    write_model("onnx_inference_crash2.onnx", model(
        [helper.make_node("Shape", ["x"], ["s"], name="shape0"),
         helper.make_node("Mul", ["s", "two"], ["y"], name="mul0")],
        [vi("x", [])], [vi("y", None, TensorProto.INT64)],
        [raw_tensor("two", [1], np.int64(2).tobytes(), TensorProto.INT64)],
        name="onnx_inference_crash2", opsets=opset(15)), "OK")

    # --- hostile models: structural lies ------------------------------------
    write_model("two_writers.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0"),
         helper.make_node("Neg", ["x"], ["y"], name="neg0")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], name="two_writers"),
        "which node 'relu0' also writes")
    write_model("writes_graph_input.onnx", model(
        [helper.make_node("Relu", ["x"], ["x"], name="relu0")],
        [vi("x", [2, 3])], [vi("x", [2, 3])], name="writes_graph_input"),
        "graph input or initializer")
    write_model("opset_wraps.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], name="opset_wraps",
        opsets=opset(2**32 + 14)), "which no onnx release defines")
    write_model("opset_twice.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], name="opset_twice",
        opsets=opset(14) + [helper.make_opsetid("ai.onnx", 13)]), "twice")
    write_model("duplicate_initializer.onnx", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add0")],
        [vi("x", [2])], [vi("y", [2])],
        [raw_tensor("w", [2], np.zeros(2, np.float32).tobytes()),
         raw_tensor("w", [3], np.zeros(3, np.float32).tobytes())],
        name="duplicate_initializer"), "two initializers are named 'w'")
    write_model("output_shape_lie.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", [2, 3])], [vi("y", [5])], name="output_shape_lie"),
        "declared with a shape")
    write_model("output_type_lie.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu0")],
        [vi("x", [2, 3])], [vi("y", [2, 3], TensorProto.INT64)],
        name="output_type_lie"), "element type")
    write_model("constant_short_data.onnx", model(
        [helper.make_node("Constant", [], ["c"], name="const0",
                          value=raw_tensor("c", [2], b"\0" * 7,
                                           TensorProto.INT64)),
         helper.make_node("Reshape", ["x", "c"], ["y"], name="reshape0")],
        [vi("x", [2, 3])], [vi("y", None)], name="constant_short_data"),
        "holds 7 bytes")
    sparse = helper.make_sparse_tensor(
        helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]),
        raw_tensor("ix", [1], b"\0" * 7, TensorProto.INT64), [4])
    write_model("sparse_attribute.onnx", model(
        [helper.make_node("Constant", [], ["y"], name="const0",
                          sparse_value=sparse)],
        [], [vi("y", [4])], name="sparse_attribute"), "sparse tensor")
    # Tile by a count whose result overflows (found by libFuzzer: it used to
    # abort building a Concat of that many operands).
    write_model("tile_overflow.onnx", model(
        [helper.make_node("Tile", ["x", "reps"], ["y"], name="tile0")],
        [vi("x", [2, 3])], [vi("y", [None, None])],
        [helper.make_tensor("reps", TensorProto.INT64, [2], [2, 2**62])],
        name="tile_overflow"), "overflow int64")
    # A GRU whose W is a scalar (found by libFuzzer: slicing it was
    # undefined behaviour); its shape is checked against ONNX's.
    write_model("gru_scalar_weight.onnx", model(
        [helper.make_node("GRU", ["x", "w", "r"], ["y"], name="gru0",
                          hidden_size=3)],
        [vi("x", [1, 2, 3]), vi("w", []), vi("r", [1, 9, 3])],
        [vi("y", [1, 1, 2, 3])], name="gru_scalar_weight"),
        "gru input w has shape [], expected [1, 9, 3]")
    # A Range whose bounds are not finite (found by libFuzzer: counting its
    # elements converted NaN to an integer, undefined behaviour).
    write_model("range_nan.onnx", model(
        [helper.make_node("Range", ["start", "limit", "delta"], ["y"],
                          name="range0")],
        [], [vi("y", [None])],
        [helper.make_tensor("start", TensorProto.FLOAT, [], [0.0]),
         helper.make_tensor("limit", TensorProto.FLOAT, [], [float("nan")]),
         helper.make_tensor("delta", TensorProto.FLOAT, [], [1.0])],
        name="range_nan"), "range start, limit and delta must be finite")
    # ONNX's text parser throws on malformed numbers instead of failing.
    write_bytes("bad_number.onnxtxt",
                b"<ir_version: 8, opset_import: [\"\" : 14]>\n"
                b"g (float[2] x) => (float[2] y)\n"
                b"<float[2] w = {0.5, .5}>\n{\n  y = Add(x, w)\n}\n",
                "malformed number")

    with open(os.path.join(out, "expected.txt"), "w") as f:
        for fname, sub in expected:
            assert "\t" not in sub and "\n" not in sub
            assert sub == "OK" or sub == sub.lower(), sub
            f.write(f"{fname}\t{sub}\n")
    print(f"wrote {len(expected)} inputs (+ external_ok.bin) to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
