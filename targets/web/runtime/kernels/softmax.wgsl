// Softmax and LogSoftmax along one (possibly flattened) axis, one invocation per row.
// Words: 0 rows (outer x inner), 1 length, 2 inner, 3 log.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn softmax(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
           @builtin(local_invocation_index) local: u32) {
  let r = flat_index(group, groups, local);
  if (r >= word(0u)) { return; }
  let length = word(1u);
  let inner = word(2u);
  let start = (r / inner) * length * inner + r % inner;
  var peak = -FLOAT_MAX;
  for (var k = 0u; k < length; k++) { peak = max(peak, x[start + k * inner]); }
  var sum = 0.0;
  for (var k = 0u; k < length; k++) { sum += exp(x[start + k * inner] - peak); }
  if (word(3u) != 0u) {
    let shift = peak + log(sum);
    for (var k = 0u; k < length; k++) { y[start + k * inner] = x[start + k * inner] - shift; }
  } else {
    let inverse = 1.0 / sum;
    for (var k = 0u; k < length; k++) { y[start + k * inner] = exp(x[start + k * inner] - peak) * inverse; }
  }
}
