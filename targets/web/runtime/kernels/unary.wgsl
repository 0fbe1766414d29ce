// Float unary ops on 4 values at a time, by kind (runtime/native/kernels/elementwise.c order); the kind is a
// pipeline constant, so each pipeline holds one op's code. Words: 1 count in vec4s, 2 a, 3 b. Buffers are padded
// to whole vec4s.

override KIND: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;

alias V = vec4<f32>;

// erf by Abramowitz & Stegun 7.1.26 on |v| (absolute error below 1.5e-7), odd extension.
fn erf_approx(v: V) -> V {
  let t = 1.0 / (1.0 + 0.3275911 * abs(v));
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(v) * (1.0 - poly * exp(-v * v));
}

// tanh without cancellation near 0: a short series for tiny inputs, exp(-2|v|) otherwise.
fn tanh_stable(v: V) -> V {
  let e = exp(-2.0 * min(abs(v), V(20.0)));
  return select(sign(v) * (1.0 - e) / (1.0 + e), v * (1.0 - v * v / 3.0), abs(v) < V(0.004));
}

fn is_nan(v: V) -> vec4<bool> { return v != v; }

fn unary_op(v: V, a: f32, b: f32) -> V {
  switch KIND {
    case 0u: { return select(V(0.0), v, (v > V(0.0)) | is_nan(v)); }
    case 1u: { return 1.0 / (1.0 + exp(-v)); }
    case 2u: { return tanh_stable(v); }
    case 3u: { return exp(v); }
    case 4u: { return log(v); }
    case 5u: { return sqrt(v); }
    case 6u: { return erf_approx(v); }
    case 7u: { return abs(v); }
    case 8u: { return -v; }
    case 9u: { return 1.0 / v; }
    case 10u: { return select(select(v, V(b), v > V(b)), V(a), v < V(a)); }
    case 11u: { return select(v, a * v, v < V(0.0)); }
    case 12u: { return clamp(a * v + b, V(0.0), V(1.0)); }
    case 13u: { return v * clamp(v / 6.0 + 0.5, V(0.0), V(1.0)); }
    case 14u: { return 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752)); }
    case 15u: { return 0.5 * v * (1.0 + tanh_stable(0.79788456080286536 * (v + 0.044715 * v * v * v))); }
    case 16u: { return floor(v); }
    case 17u: { return ceil(v); }
    case 18u: { return select(v, a * (exp(v) - 1.0), v < V(0.0)); }
    case 19u: { return select(log(1.0 + exp(v)), v, v > V(20.0)); }
    case 21u: { return select(select(v, V(-1.0), v < V(0.0)), V(1.0), v > V(0.0)); }
    case 22u: { return select(b * (a * exp(v) - a), b * v, v > V(0.0)); }
    case 23u: { return select(a * (exp(v / a) - 1.0), v, v > V(0.0)); }
    case 24u: { return v / (1.0 + abs(v)); }
    case 25u: { return select(V(0.0), v, v > V(a)); }
    case 26u: { return round(v); }
    case 43u: { return v / (1.0 + exp(-v)); }
    default: { return v; }
  }
}

// Grid-stride: each invocation walks the vec4s GROUP_SIZE x (groups along x) apart.
@compute @workgroup_size(64)
fn unary(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
         @builtin(local_invocation_index) local: u32) {
  let count = word(1u);
  let a = fword(2u);
  let b = fword(3u);
  let stride = groups.x * GROUP_SIZE;
  for (var i = group.x * GROUP_SIZE + local; i < count; i += stride) {
    y[i] = unary_op(x[i], a, b);
  }
}
