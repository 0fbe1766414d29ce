"""MIL's elementwise ops, binary (numpy broadcasting) and unary."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernel


def expit(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0, -x))


def erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, under float16 and float32 rounding here)."""
    t = 1 / (1 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1 - poly * np.exp(-x * x))

BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "real_div": np.true_divide, "pow": np.power,
          "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal,
          "greater": np.greater, "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal,
          "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
          "floor_div": np.floor_divide, "mod": np.mod}
UNARY = {"relu": lambda x: np.maximum(x, 0), "sigmoid": expit, "tanh": np.tanh, "exp": np.exp,
         "sqrt": np.sqrt, "erf": erf, "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "round": np.round,
         "sign": np.sign, "softsign": lambda x: x / (1 + np.abs(x)),
         "sin": np.sin, "cos": np.cos, "square": np.square, "logical_not": np.logical_not, "identity": np.asarray,
         "exp2": np.exp2}


def _binary(function: Any) -> Any:
    return lambda args: function(np.asarray(args["x"]), np.asarray(args["y"]))


def _unary(function: Any) -> Any:
    return lambda args: function(np.asarray(args["x"]))


for _name, _function in BINARY.items():
    kernel(_name)(_binary(_function))
for _name, _function in UNARY.items():
    kernel(_name)(_unary(_function))


@kernel("softplus")
def softplus(args: dict[str, Any]) -> np.ndarray:
    return np.logaddexp(0, np.asarray(args["x"]))


@kernel("log")
def log(args: dict[str, Any]) -> np.ndarray:
    return np.log(np.asarray(args["x"]) + args.get("epsilon", 1e-45))


@kernel("rsqrt")
def rsqrt(args: dict[str, Any]) -> np.ndarray:
    return 1 / np.sqrt(np.asarray(args["x"]) + args.get("epsilon", 1e-12))


@kernel("inverse")
def inverse(args: dict[str, Any]) -> np.ndarray:
    return 1 / (np.asarray(args["x"]) + args.get("epsilon", 1e-4))


@kernel("clip")
def clip(args: dict[str, Any]) -> np.ndarray:
    return np.clip(np.asarray(args["x"]), args["alpha"], args["beta"])


@kernel("leaky_relu")
def leaky_relu(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    return np.where(x >= 0, x, args.get("alpha", 0.01) * x)


@kernel("elu")
def elu(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    return np.where(x > 0, x, args.get("alpha", 1.0) * np.expm1(np.minimum(x, 0)))


@kernel("thresholded_relu")
def thresholded_relu(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    return np.where(x > args.get("alpha", 1.0), x, 0)


@kernel("sigmoid_hard")
def sigmoid_hard(args: dict[str, Any]) -> np.ndarray:
    return np.clip(args.get("alpha", 0.2) * np.asarray(args["x"]) + args.get("beta", 0.5), 0, 1)


@kernel("relu6")
def relu6(args: dict[str, Any]) -> np.ndarray:
    return np.clip(np.asarray(args["x"]), 0, 6)


@kernel("silu")
def silu(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    return x * expit(x)


@kernel("gelu")
def gelu(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    mode = args.get("mode", "EXACT")
    if mode == "TANH_APPROXIMATION":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    if mode == "SIGMOID_APPROXIMATION":
        return x * expit(1.702 * x)
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


@kernel("cast")
def cast(args: dict[str, Any]) -> np.ndarray:
    return np.asarray(args["x"])


@kernel("select")
def select(args: dict[str, Any]) -> np.ndarray:
    return np.where(np.asarray(args["cond"]), args["a"], args["b"])
