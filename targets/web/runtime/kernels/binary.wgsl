// Binary arithmetic (Add Sub Mul Div Pow Max Min) with numpy broadcasting. Words: kind, count, rank, then the
// output dims (4..11) and each input's element strides over them (a: 12..19, b: 20..27; 0 on broadcast axes).

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

fn is_nan(x: f32) -> bool { return !(x == x); }

// ONNX Pow: a negative base with an integral exponent keeps the sign of base^exponent.
fn power(x: f32, e: f32) -> f32 {
  if (e == 0.0) { return 1.0; }
  if (e == 1.0) { return x; }
  if (e == 2.0) { return x * x; }
  if (e == 0.5) { return sqrt(x); }
  let magnitude = pow(abs(x), e);
  if (x >= 0.0) { return magnitude; }
  if (floor(e) != e) { return bitcast<f32>(bitcast<u32>(x) | 0x7fc00000u); }
  let odd = abs(e - 2.0 * floor(e / 2.0)) == 1.0;
  return select(magnitude, -magnitude, odd);
}

fn binary_op(kind: u32, x: f32, z: f32) -> f32 {
  switch kind {
    case 0u: { return x + z; }
    case 1u: { return x - z; }
    case 2u: { return x * z; }
    case 3u: { return x / z; }
    case 4u: { return power(x, z); }
    case 5u: { return select(select(max(x, z), z, is_nan(z)), x, is_nan(x)); }
    default: { return select(select(min(x, z), z, is_nan(z)), x, is_nan(x)); }
  }
}

@compute @workgroup_size(64)
fn binary(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
          @builtin(local_invocation_index) local: u32) {
  let i = flat_index(group, groups, local);
  if (i >= word(1u)) { return; }
  var rest = i;
  var at_a = 0u;
  var at_b = 0u;
  for (var d = i32(word(2u)) - 1; d >= 0; d--) {
    let dim = word(4u + u32(d));
    let coord = rest % dim;
    rest = rest / dim;
    at_a += coord * word(12u + u32(d));
    at_b += coord * word(20u + u32(d));
  }
  y[i] = binary_op(word(0u), a[at_a], b[at_b]);
}
