// ChannelAffine (folded BatchNormalization: x * scale[c] + bias[c] over axis 1) and LayerNorm (one invocation per
// row of the normalized axes). ChannelAffine words: 0 count, 1 channels, 2 inner. LayerNorm words: 0 rows,
// 1 row length, 2 epsilon, 3 has bias.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> scale: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn channel_affine(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                  @builtin(local_invocation_index) local: u32) {
  let i = flat_index(group, groups, local);
  if (i >= word(0u)) { return; }
  let channel = (i / word(2u)) % word(1u);
  y[i] = x[i] * scale[channel] + bias[channel];
}

@compute @workgroup_size(64)
fn layer_norm(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
              @builtin(local_invocation_index) local: u32) {
  let r = flat_index(group, groups, local);
  if (r >= word(0u)) { return; }
  let length = word(1u);
  let start = r * length;
  var sum = 0.0;
  for (var i = 0u; i < length; i++) { sum += x[start + i]; }
  let mean = sum / f32(length);
  var squares = 0.0;
  for (var i = 0u; i < length; i++) {
    let d = x[start + i] - mean;
    squares += d * d;
  }
  let inverse = 1.0 / sqrt(squares / f32(length) + fword(2u));
  let has_bias = word(3u) != 0u;
  for (var i = 0u; i < length; i++) {
    let shift = select(0.0, bias[i], has_bias);
    y[start + i] = (x[start + i] - mean) * inverse * scale[i] + shift;
  }
}
