// Strided copies: Transpose, Slice, and each part of a Concat or Split. Words: 0 count, 1 rank, 2 source base,
// 3 destination base, dims 4..11, source strides 12..19, destination strides 20..27 (elements).

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn strided_copy(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) local: u32) {
  let i = flat_index(group, groups, local);
  if (i >= word(0u)) { return; }
  var rest = i;
  var read_at = word(2u);
  var write_at = word(3u);
  for (var d = i32(word(1u)) - 1; d >= 0; d--) {
    let dim = word(4u + u32(d));
    let coord = rest % dim;
    rest = rest / dim;
    read_at += coord * word(12u + u32(d));
    write_at += coord * word(20u + u32(d));
  }
  y[write_at] = x[read_at];
}
