"""`index.d.ts` of a web bundle, typed from the model's inputs and outputs."""

from __future__ import annotations

import json
import re
from typing import Any

ARRAY_TYPES = {"float32": "Float32Array", "int32": "Int32Array", "int64": "BigInt64Array", "uint8": "Uint8Array",
               "int8": "Int8Array", "bool": "Uint8Array", "float64": "Float64Array", "int16": "Int16Array",
               "uint16": "Uint16Array", "uint32": "Uint32Array", "uint64": "BigUint64Array", "float16": "Uint16Array",
               "bfloat16": "Uint16Array", "float8_e4m3fn": "Uint8Array", "float8_e4m3fnuz": "Uint8Array",
               "float8_e5m2": "Uint8Array", "float8_e5m2fnuz": "Uint8Array"}
"""The typed array of each dtype a web bundle's inputs and outputs may have; float16, bfloat16 and float8 values
are their bit patterns (as the wasm core's memory holds them; runtime/native/wasm/core.js reads outputs alike)."""


def identifier(name: str) -> str:
    """A JS identifier from a tensor name (`save_infer_model/scale_0.tmp_1` -> `save_infer_model_scale_0_tmp_1`)."""
    text = re.sub(r"\W+", "_", name).strip("_") or "value"
    return f"_{text}" if text[0].isdigit() else text


def _fields(ports: list[dict[str, Any]], exact_dims: bool) -> str:
    lines = []
    for port in ports:
        dims = json.dumps(port["dims"]) if exact_dims else "number[]"
        lines.append(f"  {json.dumps(port['name'])}: {{ data: {ARRAY_TYPES[port['dtype']]}; dims: {dims} }};"
                     f"  // {port['dtype']} {port['dims']}")
    return "\n".join(lines)


def declarations(name: str, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> str:
    return f"""// {name}: types of the edgepack web bundle's API.

export type ProviderName = "webgpu" | "wasm";

/** The model's inputs, at the shapes the bundle was built for. */
export interface Inputs {{
{_fields(inputs, exact_dims=True)}
}}

/** The model's outputs. */
export interface Outputs {{
{_fields(outputs, exact_dims=False)}
}}

export interface SessionOptions {{
  /** "auto" (default): WebGPU on a hardware adapter (not a software fallback), wasm for the rest; or a list. */
  providers?: "auto" | ProviderName[];
  /** Keep the plans in the browser's Cache API (default false). */
  cache?: boolean;
  /** Where the bundle's files are served, when not beside index.js. */
  baseUrl?: string | URL;
  /** Threads of the wasm core (default: half the logical cores, at most 4); more than one needs a cross-origin
      isolated page. */
  threads?: number;
}}

export interface ThreadsInfo {{
  /** The threads each wasm partition runs on: the page's and count - 1 Workers. */
  count: number;
  /** Why it is one where more were asked for (the page is not cross-origin isolated). */
  reason?: string;
}}

export interface PartitionInfo {{
  id: string;
  /** The provider that runs it in this session. */
  provider: ProviderName;
  /** The provider the build planned for it. */
  planned: ProviderName;
  /** Why a partition planned for WebGPU runs on wasm. */
  reason?: string;
}}

export interface AdapterInfo {{
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
}}

export interface TensorSpec {{
  name: string;
  dtype: string;
  dims: number[];
}}

export interface Session {{
  readonly inputs: TensorSpec[];
  readonly outputs: TensorSpec[];
  /** The provider of each partition, in run order. */
  readonly providers: ProviderName[];
  readonly partitions: PartitionInfo[];
  /** The WebGPU adapter, or null when no partition runs on WebGPU. */
  readonly adapter: AdapterInfo | null;
  /** The wasm core's threads, or null when no partition runs on wasm. */
  readonly threads: ThreadsInfo | null;
  /** Runs the model; rejects with an Error naming a wrong input name, dtype or dims. */
  run(feeds: Inputs): Promise<Outputs>;
  /** Frees the GPU resources and stops the wasm core's Workers. */
  release(): void;
}}

export interface ModelInfo {{
  name: string;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
  core: string;
  threadedCore: string;
  kernels: string;
  partitions: {{ id: string; provider: ProviderName; plan: string; inputs: string[]; outputs: string[] }}[];
}}

export const model: ModelInfo;

/** Fetches and compiles the model; rejects with an Error when a file is missing or corrupted. */
export function createSession(options?: SessionOptions): Promise<Session>;
"""
