// Binary arithmetic (Add Sub Mul Div Pow Max Min; the kind and the merged rank RANK are pipeline constants) with
// numpy broadcasting, one output vec4 per step. Words: 1 count, 3 count in vec4s, then the (merged) output dims
// (4..11) and each input's element strides over them (a: 12..19, b: 20..27; 0 on broadcast axes). With ROWS_OF_4
// the last dim is a multiple of 4 and each input steps A_STEP / B_STEP (0 or 1) along it, so a vec4 reads as one
// load or one splat.

override KIND: u32 = 0u;
override RANK: i32 = 1;
override ROWS_OF_4: bool = false;
override A_STEP: u32 = 1u;
override B_STEP: u32 = 1u;

@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<vec4<f32>>;

alias V = vec4<f32>;

fn is_nan(v: V) -> vec4<bool> { return v != v; }

// ONNX Pow: a negative base with an integral exponent keeps the sign of base^exponent; others are NaN.
fn power(x: V, e: V) -> V {
  let magnitude = pow(abs(x), e);
  let odd = abs(e - 2.0 * floor(e / 2.0)) == V(1.0);
  let negative = select(bitcast<V>(bitcast<vec4<u32>>(x) | vec4<u32>(0x7fc00000u)), select(magnitude, -magnitude, odd),
                        floor(e) == e);
  var v = select(negative, magnitude, x >= V(0.0));
  v = select(v, sqrt(x), e == V(0.5));
  v = select(v, x * x, e == V(2.0));
  v = select(v, x, e == V(1.0));
  return select(v, V(1.0), e == V(0.0));
}

fn binary_op(x: V, z: V) -> V {
  switch KIND {
    case 0u: { return x + z; }
    case 1u: { return x - z; }
    case 2u: { return x * z; }
    case 3u: { return x / z; }
    case 4u: { return power(x, z); }
    case 5u: { return select(select(max(x, z), z, is_nan(z)), x, is_nan(x)); }
    default: { return select(select(min(x, z), z, is_nan(z)), x, is_nan(x)); }
  }
}

// The element offsets into a and b of output element e.
fn offsets(e: u32) -> vec2<u32> {
  var rest = e;
  var at = vec2<u32>(0u);
  for (var d = RANK - 1; d >= 0; d--) {
    let dim = word(4u + u32(d));
    let coord = rest % dim;
    rest = rest / dim;
    at += coord * vec2<u32>(word(12u + u32(d)), word(20u + u32(d)));
  }
  return at;
}

fn a_at(at: u32) -> f32 { return a[at >> 2u][at & 3u]; }
fn b_at(at: u32) -> f32 { return b[at >> 2u][at & 3u]; }

fn a_row(at: u32) -> V {
  if (A_STEP == 1u) { return a[at >> 2u]; }
  return V(a_at(at));
}

fn b_row(at: u32) -> V {
  if (B_STEP == 1u) { return b[at >> 2u]; }
  return V(b_at(at));
}

fn row_of_4(i: u32) -> V {
  let at = offsets(4u * i);
  return binary_op(a_row(at.x), b_row(at.y));
}

fn gathered(i: u32) -> V {
  var x = V(0.0);
  var z = V(0.0);
  let last = word(1u) - 1u;
  for (var t = 0u; t < 4u; t++) {
    let at = offsets(min(4u * i + t, last));
    x[t] = a_at(at.x);
    z[t] = b_at(at.y);
  }
  return binary_op(x, z);
}

@compute @workgroup_size(64)
fn binary(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
          @builtin(local_invocation_index) local: u32) {
  let count = word(3u);
  let stride = groups.x * GROUP_SIZE;
  for (var i = group.x * GROUP_SIZE + local; i < count; i += stride) {
    if (ROWS_OF_4) { y[i] = row_of_4(i); } else { y[i] = gathered(i); }
  }
}
