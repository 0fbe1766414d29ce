// MaxPool and AveragePool over NCHW planes (1-D as H = 1), one invocation per output. Words: 0 kind (0 max,
// 1 average), 1 count_include_pad, 2 kh, 3 kw, 4 sh, 5 sw, 6 pad top, 7 pad left, 8 pad bottom, 9 pad right,
// 10 dh, 11 dw, 12 h, 13 w, 14 oh, 15 ow, 16 output count.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn pool(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
  let i = flat_index(group, groups, local);
  if (i >= word(16u)) { return; }
  let h = iword(12u);
  let width = iword(13u);
  let ow = word(15u);
  let positions = word(14u) * ow;
  let plane = (i / positions) * u32(h * width);
  let oy = i32((i % positions) / ow);
  let ox = i32(i % ow);
  let is_max = word(0u) == 0u;
  let pt = iword(6u);
  let pl = iword(7u);
  var acc = select(0.0, -FLOAT_MAX, is_max);
  var count = 0;
  var padded = 0;
  for (var ky = 0; ky < iword(2u); ky++) {
    let iy = oy * iword(4u) - pt + ky * iword(10u);
    for (var kx = 0; kx < iword(3u); kx++) {
      let ix = ox * iword(5u) - pl + kx * iword(11u);
      if (iy >= -pt && iy < h + iword(8u) && ix >= -pl && ix < width + iword(9u)) { padded++; }
      if (iy < 0 || iy >= h || ix < 0 || ix >= width) { continue; }
      let v = x[plane + u32(iy * width + ix)];
      if (is_max) { acc = select(acc, v, v > acc || !(v == v)); } else { acc += v; }
      count++;
    }
  }
  if (is_max) {
    y[i] = select(0.0, acc, count > 0);
  } else {
    let divisor = select(count, padded, word(1u) != 0u);
    y[i] = select(0.0, acc / f32(divisor), divisor > 0);
  }
}
