// Conv (implicit GEMM with 4x4 register tiles; a direct depthwise kernel) and ConvTranspose (gather form), NCHW
// with 1-D as H = 1. Words: 0 n, 1 c, 2 h, 3 w, 4 m, 5 oh, 6 ow, 7 group, 8 cg, 9 mg, 10 kh, 11 kw, 12 sh, 13 sw,
// 14 pad top, 15 pad left, 16 dh, 17 dw, 18 activation, 19 act a, 20 act b, 21 has bias, 22 output count.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

fn bias_of(m: u32) -> f32 { return select(0.0, bias[m], word(21u) != 0u); }

fn finish(m: u32, v: f32) -> f32 { return activate(word(18u), v + bias_of(m), fword(19u), fword(20u)); }

// The input value at (row, column) of one plane, 0 outside it.
fn tap(plane: u32, row: vec4<i32>, column: vec4<i32>) -> vec4<f32> {
  let inside = (row >= vec4<i32>(0)) & (row < vec4<i32>(iword(2u))) & (column >= vec4<i32>(0)) &
    (column < vec4<i32>(iword(3u)));
  let at = vec4<u32>(select(vec4<i32>(0), row * iword(3u) + column, inside)) + vec4<u32>(plane);
  let v = vec4<f32>(x[at.x], x[at.y], x[at.z], x[at.w]);
  return select(vec4<f32>(0.0), v, inside);
}

// One invocation: 4 output channels (y) x 4 output positions (x) of one image and group (z).
@compute @workgroup_size(16, 4)
fn conv_tiled(@builtin(global_invocation_id) id: vec3<u32>) {
  let positions = word(5u) * word(6u);
  let mg = word(9u);
  let j0 = id.x * 4u;
  let m0 = id.y * 4u;
  if (j0 >= positions || m0 >= mg) { return; }
  let image = id.z / word(7u);
  let g = id.z % word(7u);
  let cg = word(8u);
  let kh = word(10u);
  let kw = word(11u);
  let ks = cg * kh * kw;
  let j = min(vec4<u32>(j0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(positions - 1u));
  let row0 = vec4<i32>(j / word(6u)) * iword(12u) - iword(14u);
  let col0 = vec4<i32>(j % word(6u)) * iword(13u) - iword(15u);
  let rows = vec4<u32>(min(vec4<u32>(m0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(mg - 1u)) + g * mg) * ks;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  let plane_size = word(2u) * word(3u);
  var k = 0u;
  for (var c = 0u; c < cg; c++) {
    let plane = (image * word(1u) + g * cg + c) * plane_size;
    for (var ky = 0u; ky < kh; ky++) {
      let row = row0 + vec4<i32>(i32(ky) * iword(16u));
      for (var kx = 0u; kx < kw; kx++) {
        let v = tap(plane, row, col0 + vec4<i32>(i32(kx) * iword(17u)));
        acc0 += w[rows.x + k] * v;
        acc1 += w[rows.y + k] * v;
        acc2 += w[rows.z + k] * v;
        acc3 += w[rows.w + k] * v;
        k++;
      }
    }
  }
  let out_base = (image * word(4u) + g * mg) * positions;
  let accs = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
  for (var r = 0u; r < 4u; r++) {
    let m = m0 + r;
    if (m >= mg) { break; }
    for (var t = 0u; t < 4u; t++) {
      if (j0 + t < positions) { y[out_base + m * positions + j0 + t] = finish(g * mg + m, accs[r][t]); }
    }
  }
}

// One invocation per output element of a depthwise conv (one input channel per output channel).
@compute @workgroup_size(64)
fn conv_depthwise(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                  @builtin(local_invocation_index) local: u32) {
  let i = flat_index(group, groups, local);
  if (i >= word(22u)) { return; }
  let ow = word(6u);
  let positions = word(5u) * ow;
  let plane_index = i / positions;
  let m = plane_index % word(4u);
  let oy = (i % positions) / ow;
  let ox = i % ow;
  let h = iword(2u);
  let width = iword(3u);
  let plane = plane_index * u32(h * width);
  let kh = word(10u);
  let kw = word(11u);
  var acc = 0.0;
  for (var ky = 0u; ky < kh; ky++) {
    let iy = i32(oy) * iword(12u) - iword(14u) + i32(ky) * iword(16u);
    if (iy < 0 || iy >= h) { continue; }
    for (var kx = 0u; kx < kw; kx++) {
      let ix = i32(ox) * iword(13u) - iword(15u) + i32(kx) * iword(17u);
      if (ix < 0 || ix >= width) { continue; }
      acc += w[(m * kh + ky) * kw + kx] * x[plane + u32(iy * width + ix)];
    }
  }
  y[i] = finish(m, acc);
}

// ConvTranspose, one invocation per output element: the sum over the input taps that scatter onto it.
// Weights are [c, mg, kh, kw].
@compute @workgroup_size(64)
fn conv_transpose(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                  @builtin(local_invocation_index) local: u32) {
  let i = flat_index(group, groups, local);
  if (i >= word(22u)) { return; }
  let ow = word(6u);
  let positions = word(5u) * ow;
  let m = (i / positions) % word(4u);
  let image = i / (positions * word(4u));
  let oy = i32((i % positions) / ow);
  let ox = i32(i % ow);
  let mg = word(9u);
  let g = m / mg;
  let cg = word(8u);
  let kh = word(10u);
  let kw = word(11u);
  let h = iword(2u);
  let width = iword(3u);
  let sh = iword(12u);
  let sw = iword(13u);
  var acc = 0.0;
  for (var ky = 0u; ky < kh; ky++) {
    let ty = oy + iword(14u) - i32(ky) * iword(16u);
    if (ty < 0 || ty % sh != 0 || ty / sh >= h) { continue; }
    for (var kx = 0u; kx < kw; kx++) {
      let tx = ox + iword(15u) - i32(kx) * iword(17u);
      if (tx < 0 || tx % sw != 0 || tx / sw >= width) { continue; }
      let at = u32((ty / sh) * width + tx / sw);
      for (var c = 0u; c < cg; c++) {
        let channel = g * cg + c;
        let input = x[(image * word(1u) + channel) * u32(h * width) + at];
        acc += input * w[((channel * mg + m % mg) * kh + ky) * kw + kx];
      }
    }
  }
  y[i] = finish(m, acc);
}
