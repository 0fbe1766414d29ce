// Conv (implicit GEMM with 8x4 register tiles; depthwise 4 outputs of a row at a time) and ConvTranspose (gather
// form), NCHW with 1-D as H = 1. Words: 0 n, 1 c, 2 h, 3 w, 4 m, 5 oh, 6 ow, 7 group, 8 cg, 9 mg, 10 kh, 11 kw,
// 12 sh, 13 sw, 14 pad top, 15 pad left, 16 dh, 17 dw, 19 act a, 20 act b, 21 has bias, 22 output count (ConvTranspose)
// or row quads (depthwise), 23 vec4s per packed weight row. The fused activation is the pipeline constant ACT.
// conv_tiled reads weights packed as [group][cg kh kw][mg rounded up to 8] (vec4 = 4 output channels); the others
// read them as the model has them.

override ACT: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

fn bias_of(m: u32) -> f32 { return select(0.0, bias[m], word(21u) != 0u); }

fn finish(m: u32, v: f32) -> f32 { return activate(ACT, v + bias_of(m), fword(19u), fword(20u)); }

fn weight_at(at: u32) -> f32 { return w[at >> 2u][at & 3u]; }

// The input values at 4 (row, column) places of one plane (height x width), 0 outside it.
fn tap(plane: u32, row: vec4<i32>, column: vec4<i32>, height: i32, width: i32) -> vec4<f32> {
  let inside = (row >= vec4<i32>(0)) & (row < vec4<i32>(height)) & (column >= vec4<i32>(0)) &
    (column < vec4<i32>(width));
  let at = vec4<u32>(select(vec4<i32>(0), row * width + column, inside)) + vec4<u32>(plane);
  return select(vec4<f32>(0.0), vec4<f32>(x[at.x], x[at.y], x[at.z], x[at.w]), inside);
}

// One invocation: 8 output channels (y) x 4 output positions (x) of one image and group (z).
@compute @workgroup_size(16, 4)
fn conv_tiled(@builtin(global_invocation_id) id: vec3<u32>) {
  let ow = word(6u);
  let positions = word(5u) * ow;
  let mg = word(9u);
  let j0 = id.x * 4u;
  let m0 = id.y * 8u;
  if (j0 >= positions || m0 >= mg) { return; }
  let groups = word(7u);
  let image = id.z / groups;
  let g = id.z % groups;
  let cg = word(8u);
  let kh = word(10u);
  let kw = word(11u);
  let height = iword(2u);
  let width = iword(3u);
  let dh = iword(16u);
  let dw = iword(17u);
  let row_vectors = word(23u);
  let j = min(vec4<u32>(j0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(positions - 1u));
  let row0 = vec4<i32>(j / ow) * iword(12u) - iword(14u);
  let col0 = vec4<i32>(j % ow) * iword(13u) - iword(15u);
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  var acc4 = vec4<f32>(0.0);
  var acc5 = vec4<f32>(0.0);
  var acc6 = vec4<f32>(0.0);
  var acc7 = vec4<f32>(0.0);
  let plane_size = u32(height * width);
  var weight = g * cg * kh * kw * row_vectors + m0 / 4u;
  for (var c = 0u; c < cg; c++) {
    let plane = i32((image * word(1u) + g * cg + c) * plane_size);
    for (var ky = 0u; ky < kh; ky++) {
      let row = row0 + vec4<i32>(i32(ky) * dh);
      let row_inside = (row >= vec4<i32>(0)) & (row < vec4<i32>(height));
      let row_start = row * width + vec4<i32>(plane);
      for (var kx = 0u; kx < kw; kx++) {
        let column = col0 + vec4<i32>(i32(kx) * dw);
        let inside = row_inside & (column >= vec4<i32>(0)) & (column < vec4<i32>(width));
        let at = vec4<u32>(select(vec4<i32>(0), row_start + column, inside));
        let v = select(vec4<f32>(0.0), vec4<f32>(x[at.x], x[at.y], x[at.z], x[at.w]), inside);
        let low = w[weight];
        let high = w[weight + 1u];
        weight += row_vectors;
        acc0 += low.x * v;
        acc1 += low.y * v;
        acc2 += low.z * v;
        acc3 += low.w * v;
        acc4 += high.x * v;
        acc5 += high.y * v;
        acc6 += high.z * v;
        acc7 += high.w * v;
      }
    }
  }
  let out_base = (image * word(4u) + g * mg) * positions;
  let accs = array<vec4<f32>, 8>(acc0, acc1, acc2, acc3, acc4, acc5, acc6, acc7);
  for (var r = 0u; r < 8u; r++) {
    let m = m0 + r;
    if (m >= mg) { break; }
    for (var t = 0u; t < 4u; t++) {
      if (j0 + t < positions) { y[out_base + m * positions + j0 + t] = finish(g * mg + m, accs[r][t]); }
    }
  }
}

// Depthwise (one input channel per output channel): one invocation per 4 neighbouring outputs of a row.
@compute @workgroup_size(64)
fn conv_depthwise(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                  @builtin(local_invocation_index) local: u32) {
  let quad = flat_index(group, groups, local);
  if (quad >= word(22u)) { return; }
  let ow = word(6u);
  let quads = (ow + 3u) / 4u;
  let plane_index = quad / (word(5u) * quads);
  let m = plane_index % word(4u);
  let oy = (quad / quads) % word(5u);
  let ox0 = (quad % quads) * 4u;
  let height = iword(2u);
  let width = iword(3u);
  let plane = plane_index * u32(height * width);
  let kh = word(10u);
  let kw = word(11u);
  let row0 = i32(oy) * iword(12u) - iword(14u);
  let col0 = vec4<i32>(vec4<u32>(ox0) + vec4<u32>(0u, 1u, 2u, 3u)) * iword(13u) - iword(15u);
  let dh = iword(16u);
  let dw = iword(17u);
  var acc = vec4<f32>(0.0);
  var weight = m * kh * kw;
  for (var ky = 0u; ky < kh; ky++) {
    let row = vec4<i32>(row0 + i32(ky) * dh);
    for (var kx = 0u; kx < kw; kx++) {
      acc += weight_at(weight) * tap(plane, row, col0 + vec4<i32>(i32(kx) * dw), height, width);
      weight++;
    }
  }
  let out_base = (plane_index * word(5u) + oy) * ow;
  for (var t = 0u; t < 4u; t++) {
    if (ox0 + t < ow) { y[out_base + ox0 + t] = finish(m, acc[t]); }
  }
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
        acc += input * weight_at(((channel * mg + m % mg) * kh + ky) * kw + kx);
      }
    }
  }
  y[i] = finish(m, acc);
}
