// Strided copies: Transpose, Slice, and each part of a Concat or Split, over RANK (merged) axes, a pipeline
// constant. Words: 0 count, 2 source base, 3 destination base, dims 4..11, source strides 12..19, destination
// strides 20..27 (elements). With ROWS_OF_4 the last dim is a multiple of 4, contiguous on both sides, and both
// bases are multiples of 4: each step moves one vec4 (read as one load, written as 4 scalar stores, so no two
// invocations ever write the same vec4).

override ROWS_OF_4: bool = false;
override RANK: i32 = 1;

@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// Source and destination element offsets of element i of the copied block.
fn offsets(i: u32) -> vec2<u32> {
  var rest = i;
  var at = vec2<u32>(word(2u), word(3u));
  for (var d = RANK - 1; d >= 0; d--) {
    let dim = word(4u + u32(d));
    let coord = rest % dim;
    rest = rest / dim;
    at += coord * vec2<u32>(word(12u + u32(d)), word(20u + u32(d)));
  }
  return at;
}

@compute @workgroup_size(64)
fn strided_copy(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) local: u32) {
  let count = select(word(0u), word(0u) / 4u, ROWS_OF_4);
  let stride = groups.x * GROUP_SIZE;
  for (var i = group.x * GROUP_SIZE + local; i < count; i += stride) {
    if (ROWS_OF_4) {
      let at = offsets(4u * i);
      let v = x[at.x >> 2u];
      y[at.y] = v.x;
      y[at.y + 1u] = v.y;
      y[at.y + 2u] = v.z;
      y[at.y + 3u] = v.w;
    } else {
      let at = offsets(i);
      y[at.y] = x[at.x >> 2u][at.x & 3u];
    }
  }
}
