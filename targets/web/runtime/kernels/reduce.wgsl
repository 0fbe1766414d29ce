// Reduce (Sum Mean Max Min Prod SumSquare L1 L2 LogSum), one invocation per output. Words: 0 kind, 1 outputs,
// 2 kept rank, 3 reduced rank, 4 reduced count; kept dims 8..15 and their input strides 16..23; reduced dims
// 24..31 and their input strides 32..39.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// The input offset of element `index` of a row-major walk over `rank` dims starting at word `dims`.
fn offset_of(index: u32, rank: u32, dims: u32, strides: u32) -> u32 {
  var rest = index;
  var at = 0u;
  for (var d = i32(rank) - 1; d >= 0; d--) {
    let dim = word(dims + u32(d));
    at += (rest % dim) * word(strides + u32(d));
    rest = rest / dim;
  }
  return at;
}

@compute @workgroup_size(64)
fn reduce(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
          @builtin(local_invocation_index) local: u32) {
  let o = flat_index(group, groups, local);
  if (o >= word(1u)) { return; }
  let kind = word(0u);
  let base = offset_of(o, word(2u), 8u, 16u);
  let count = word(4u);
  var acc = select(0.0, 1.0, kind == 4u);
  var extreme = select(FLOAT_MAX, -FLOAT_MAX, kind == 2u);
  for (var k = 0u; k < count; k++) {
    let v = x[base + offset_of(k, word(3u), 24u, 32u)];
    switch kind {
      case 2u: { extreme = select(extreme, v, v > extreme || !(v == v)); }
      case 3u: { extreme = select(extreme, v, v < extreme || !(v == v)); }
      case 4u: { acc *= v; }
      case 5u, 7u: { acc += v * v; }
      case 6u: { acc += abs(v); }
      default: { acc += v; }
    }
  }
  switch kind {
    case 1u: { y[o] = select(0.0, acc / f32(count), count > 0u); }
    case 2u, 3u: { y[o] = extreme; }
    case 7u: { y[o] = sqrt(acc); }
    case 8u: { y[o] = log(acc); }
    default: { y[o] = acc; }
  }
}
