// Batched matrix product with 4x8 register tiles (4 rows, 8 columns per invocation), for MatMul, Gemm and
// pointwise Conv:
// y[b][m][n] = act(alpha * sum_k A[m, k] B[k, n] + beta * C[m, n]), every operand read through element strides
// so transposes and broadcasts cost nothing. Words: 0 M, 1 N, 2 K, 3 batches, 4 A m stride, 5 A k stride,
// 6 B k stride, 7 B n stride, 8 C m stride, 9 C n stride, 10 alpha, 11 beta, 13 act a, 14 act b, 15 has C.
// offsets[b] holds batch b's element offsets into A, B, C and y. Pipeline constants: the fused activation, and
// whether A's 4 rows (A_ROWS_4) or B's 4 columns (B_COLUMNS_4) are one aligned vec4 load.

override ACT: u32 = 0u;
override A_ROWS_4: bool = false;
override B_COLUMNS_4: bool = false;

@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> c: array<f32>;
@group(0) @binding(4) var<storage, read> offsets: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

fn a_at(at: u32) -> f32 { return a[at >> 2u][at & 3u]; }
fn b_at(at: u32) -> f32 { return b[at >> 2u][at & 3u]; }

fn a_rows(at: vec4<u32>) -> vec4<f32> {
  if (A_ROWS_4) { return a[at.x >> 2u]; }
  return vec4<f32>(a_at(at.x), a_at(at.y), a_at(at.z), a_at(at.w));
}

fn b_columns(at: vec4<u32>) -> vec4<f32> {
  if (B_COLUMNS_4) { return b[at.x >> 2u]; }
  return vec4<f32>(b_at(at.x), b_at(at.y), b_at(at.z), b_at(at.w));
}

@compute @workgroup_size(16, 4)
fn gemm(@builtin(global_invocation_id) id: vec3<u32>) {
  let rows = word(0u);
  let columns = word(1u);
  let depth = word(2u);
  let n0 = id.x * 8u;
  let m0 = id.y * 4u;
  if (n0 >= columns || m0 >= rows || id.z >= word(3u)) { return; }
  let base = offsets[id.z];
  let lanes = vec4<u32>(0u, 1u, 2u, 3u);
  let a_start = vec4<u32>(base.x) + min(vec4<u32>(m0) + lanes, vec4<u32>(rows - 1u)) * word(4u);
  let last_column = vec4<u32>(columns - 1u);
  let b_left = vec4<u32>(base.y) + min(vec4<u32>(n0) + lanes, last_column) * word(7u);
  let b_right = vec4<u32>(base.y) + min(vec4<u32>(n0 + 4u) + lanes, last_column) * word(7u);
  let a_step = word(5u);
  let b_step = word(6u);
  var left0 = vec4<f32>(0.0);
  var left1 = vec4<f32>(0.0);
  var left2 = vec4<f32>(0.0);
  var left3 = vec4<f32>(0.0);
  var right0 = vec4<f32>(0.0);
  var right1 = vec4<f32>(0.0);
  var right2 = vec4<f32>(0.0);
  var right3 = vec4<f32>(0.0);
  for (var k = 0u; k < depth; k++) {
    let av = a_rows(a_start + vec4<u32>(k * a_step));
    let left = b_columns(b_left + vec4<u32>(k * b_step));
    let right = b_columns(b_right + vec4<u32>(k * b_step));
    left0 += av.x * left;
    left1 += av.y * left;
    left2 += av.z * left;
    left3 += av.w * left;
    right0 += av.x * right;
    right1 += av.y * right;
    right2 += av.z * right;
    right3 += av.w * right;
  }
  let accs = array<vec4<f32>, 8>(left0, left1, left2, left3, right0, right1, right2, right3);
  let alpha = fword(10u);
  let beta = fword(11u);
  let has_c = word(15u) != 0u;
  for (var r = 0u; r < 4u; r++) {
    let row = m0 + r;
    if (row >= rows) { break; }
    for (var t = 0u; t < 8u; t++) {
      let column = n0 + t;
      if (column >= columns) { break; }
      var v = alpha * accs[r + 4u * (t / 4u)][t % 4u];
      if (has_c) { v += beta * c[base.z + row * word(8u) + column * word(9u)]; }
      y[base.w + row * columns + column] = activate(ACT, v, fword(13u), fword(14u));
    }
  }
}
