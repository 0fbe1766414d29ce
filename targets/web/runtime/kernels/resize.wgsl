// Resize, nearest and (up to 3-axis) linear, one invocation per output; mode, coordinate transform and nearest mode
// are pipeline constants. MODE: 0 nearest, 1 linear. TRANSFORM: 0 half_pixel, 1 asymmetric, 2 align_corners,
// 3 pytorch_half_pixel, 4 tf_half_pixel_for_nearest. NEAREST: 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor,
// 3 ceil. Words: 3 rank, 4 count; input dims 8..15, output dims 16..23, scales 24..31, 32..39 1 on the
// resized axes (the others, merged where adjacent, map straight through).

override MODE: u32 = 0u;
override TRANSFORM: u32 = 0u;
override NEAREST: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

fn source_coordinate(o: u32, in_length: u32, out_length: u32, scale: f32) -> f32 {
  let position = f32(o);
  switch TRANSFORM {
    case 1u: { return position / scale; }
    case 2u: { return select(position * f32(in_length - 1u) / f32(out_length - 1u), 0.0, out_length == 1u); }
    case 3u: { return select(0.0, (position + 0.5) / scale - 0.5, out_length > 1u); }
    case 4u: { return (position + 0.5) / scale; }
    default: { return (position + 0.5) / scale - 0.5; }
  }
}

fn nearest_index(s: f32, length: u32) -> u32 {
  let f = floor(s);
  let frac = s - f;
  var i: f32;
  switch NEAREST {
    case 1u: { i = select(f, f + 1.0, frac >= 0.5); }
    case 2u: { i = f; }
    case 3u: { i = select(f, f + 1.0, frac > 0.0); }
    default: { i = select(f, f + 1.0, frac > 0.5); }
  }
  return u32(clamp(i, 0.0, f32(length - 1u)));
}

fn nearest(o: u32) -> f32 {
  var rest = o;
  var stride = 1u;
  var at = 0u;
  for (var d = i32(word(3u)) - 1; d >= 0; d--) {
    let in_length = word(8u + u32(d));
    let out_length = word(16u + u32(d));
    let coord = rest % out_length;
    rest = rest / out_length;
    if (word(32u + u32(d)) == 0u) {
      at += coord * stride;
    } else {
      at += nearest_index(source_coordinate(coord, in_length, out_length, fword(24u + u32(d))), in_length) * stride;
    }
    stride *= in_length;
  }
  return x[at];
}

fn linear(o: u32) -> f32 {
  var rest = o;
  var stride = 1u;
  var base = 0u;
  var axes = 0u;
  var steps = vec3<u32>(0u);
  var weights = vec3<f32>(0.0);
  for (var d = i32(word(3u)) - 1; d >= 0; d--) {
    let in_length = word(8u + u32(d));
    let out_length = word(16u + u32(d));
    let coord = rest % out_length;
    rest = rest / out_length;
    if (word(32u + u32(d)) == 0u) {
      base += coord * stride;
    } else {
      let s = source_coordinate(coord, in_length, out_length, fword(24u + u32(d)));
      let clamped = clamp(s, 0.0, f32(in_length - 1u));
      let i0 = u32(floor(clamped));
      base += i0 * stride;
      steps[axes] = select(0u, stride, i0 + 1u < in_length);
      weights[axes] = clamped - f32(i0);
      axes++;
    }
    stride *= in_length;
  }
  var acc = 0.0;
  for (var corner = 0u; corner < (1u << axes); corner++) {
    var weight = 1.0;
    var at = base;
    for (var k = 0u; k < axes; k++) {
      let upper = ((corner >> k) & 1u) == 1u;
      weight *= select(1.0 - weights[k], weights[k], upper);
      at += select(0u, steps[k], upper);
    }
    acc += weight * x[at];
  }
  return acc;
}

@compute @workgroup_size(64)
fn resize(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
          @builtin(local_invocation_index) local: u32) {
  let count = word(4u);
  let stride = groups.x * GROUP_SIZE;
  for (var o = group.x * GROUP_SIZE + local; o < count; o += stride) {
    if (MODE == 0u) { y[o] = nearest(o); } else { y[o] = linear(o); }
  }
}
