"""A page function for Playwright's `page.evaluate`: how many pixels of a PNG screenshot (base64) have each of the
given colours (#rrggbb, within 2 per channel), decoded in the browser itself."""

COUNT_COLOURS = """async ([png, colours]) => {
  const image = new Image();
  image.src = "data:image/png;base64," + png;
  await image.decode();
  const canvas = new OffscreenCanvas(image.width, image.height);
  const context = canvas.getContext("2d");
  context.drawImage(image, 0, 0);
  const pixels = context.getImageData(0, 0, image.width, image.height).data;
  return colours.map((hex) => {
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    let count = 0;
    for (let i = 0; i < pixels.length; i += 4) {
      if (Math.abs(pixels[i] - r) <= 2 && Math.abs(pixels[i + 1] - g) <= 2 && Math.abs(pixels[i + 2] - b) <= 2) count++;
    }
    return count;
  });
}"""
