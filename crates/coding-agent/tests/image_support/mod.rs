//! Images for the tests of the tools that send them to the model (`read`,
//! MCP tools).

/// A 2x2 PNG whose header says `width` x `height`: a decompression bomb's
/// shape (a small file that decodes to gigabytes), without its pixels.
pub fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    png_claiming_as(width, height, 8, 2)
}

/// [`png_claiming`] with the header's bit depth and PNG colour type (2 RGB,
/// 6 RGBA) too.
pub fn png_claiming_as(width: u32, height: u32, bit_depth: u8, colour_type: u8) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
            }
        }
        !crc
    }
    let mut png = png_of(&image::RgbImage::from_pixel(2, 2, image::Rgb([1, 2, 3])));
    // Signature (8), IHDR's length (4), then "IHDR", width, height, bit
    // depth, colour type, 3 more bytes of header, and its CRC over type and
    // data.
    png[16..20].copy_from_slice(&width.to_be_bytes());
    png[20..24].copy_from_slice(&height.to_be_bytes());
    png[24] = bit_depth;
    png[25] = colour_type;
    let crc = crc32(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    png
}

/// `image` encoded as PNG.
pub fn png_of(image: &image::RgbImage) -> Vec<u8> {
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    png
}
