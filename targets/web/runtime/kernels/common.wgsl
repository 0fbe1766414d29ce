// Shared by every kernel: the op's parameter words (one uniform buffer per op), flat invocation indices over a
// dispatch split across x and y, and the activations fused into Conv, ConvTranspose and Gemm.

struct Params { words: array<vec4<u32>, 16> }
@group(0) @binding(0) var<uniform> params: Params;

const GROUP_SIZE: u32 = 64u;
const FLOAT_MAX: f32 = 3.4028234663852886e38;

fn word(i: u32) -> u32 { return params.words[i >> 2u][i & 3u]; }
fn iword(i: u32) -> i32 { return bitcast<i32>(word(i)); }
fn fword(i: u32) -> f32 { return bitcast<f32>(word(i)); }

// The element a 1-D invocation owns when a dispatch of GROUP_SIZE-wide groups spans x then y.
fn flat_index(group: vec3<u32>, groups: vec3<u32>, local: u32) -> u32 {
  return (group.y * groups.x + group.x) * GROUP_SIZE + local;
}

fn sigmoid(x: f32) -> f32 { return 1.0 / (1.0 + exp(-x)); }

// Fused activations: 0 none, 1 Relu, 2 Clip(a, b), 3 HardSwish, 4 HardSigmoid(a, b), 5 LeakyRelu(a), 6 Sigmoid,
// 7 a * HardSwish + b, 8 Swish.
fn activate(act: u32, x: f32, a: f32, b: f32) -> f32 {
  switch act {
    case 1u: { return max(x, 0.0); }
    case 2u: { return min(max(x, a), b); }
    case 3u: { return x * clamp(x / 6.0 + 0.5, 0.0, 1.0); }
    case 4u: { return clamp(a * x + b, 0.0, 1.0); }
    case 5u: { return select(x, a * x, x < 0.0); }
    case 6u: { return sigmoid(x); }
    case 7u: { return a * (x * clamp(x / 6.0 + 0.5, 0.0, 1.0)) + b; }
    case 8u: { return x * sigmoid(x); }
    default: { return x; }
  }
}
