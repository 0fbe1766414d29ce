// Float unary ops, by kind (runtime/native/kernels/elementwise.c order). Words: kind, count, a, b.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// erf by Abramowitz & Stegun 7.1.26 on |v| (absolute error below 1.5e-7), odd extension.
fn erf_approx(v: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.3275911 * abs(v));
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(v) * (1.0 - poly * exp(-v * v));
}

// tanh without cancellation near 0: expm1-free form on |v| with a series for tiny inputs.
fn tanh_stable(v: f32) -> f32 {
  let m = abs(v);
  if (m < 0.004) { return v * (1.0 - v * v / 3.0); }
  let e = exp(-2.0 * min(m, 20.0));
  return sign(v) * (1.0 - e) / (1.0 + e);
}

fn unary_op(kind: u32, v: f32, a: f32, b: f32) -> f32 {
  switch kind {
    case 0u: { return select(0.0, v, v > 0.0 || !(v == v)); }
    case 1u: { return sigmoid(v); }
    case 2u: { return tanh_stable(v); }
    case 3u: { return exp(v); }
    case 4u: { return log(v); }
    case 5u: { return sqrt(v); }
    case 6u: { return erf_approx(v); }
    case 7u: { return abs(v); }
    case 8u: { return -v; }
    case 9u: { return 1.0 / v; }
    case 10u: { return select(select(v, b, v > b), a, v < a); }
    case 11u: { return select(v, a * v, v < 0.0); }
    case 12u: { return clamp(a * v + b, 0.0, 1.0); }
    case 13u: { return v * clamp(v / 6.0 + 0.5, 0.0, 1.0); }
    case 14u: { return 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752)); }
    case 15u: { return 0.5 * v * (1.0 + tanh_stable(0.79788456080286536 * (v + 0.044715 * v * v * v))); }
    case 16u: { return floor(v); }
    case 17u: { return ceil(v); }
    case 18u: { return select(v, a * (exp(v) - 1.0), v < 0.0); }
    case 19u: { return select(log(1.0 + exp(v)), v, v > 20.0); }
    case 21u: { return select(select(v, -1.0, v < 0.0), 1.0, v > 0.0); }
    case 22u: { return select(b * (a * exp(v) - a), b * v, v > 0.0); }
    case 23u: { return select(a * (exp(v / a) - 1.0), v, v > 0.0); }
    case 24u: { return v / (1.0 + abs(v)); }
    case 25u: { return select(0.0, v, v > a); }
    case 26u: { return round(v); }
    default: { return v; }
  }
}

@compute @workgroup_size(64)
fn unary(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
         @builtin(local_invocation_index) local: u32) {
  let i = flat_index(group, groups, local);
  if (i >= word(1u)) { return; }
  y[i] = unary_op(word(0u), x[i], fword(2u), fword(3u));
}
