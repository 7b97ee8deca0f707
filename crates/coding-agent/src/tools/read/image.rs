//! Images for the model: recognising them by their first bytes and fitting
//! them within what providers accept inline.
//!
//! Pi's limits and search order (`image-resize.ts`): at most 2000x2000 pixels
//! and 4.5 MiB of base64. An image within both is sent unchanged. Otherwise
//! it is scaled to fit 2000x2000 (Lanczos3, EXIF orientation applied) and
//! encoded as PNG, then as JPEG at qualities 80, 85, 70, 55 and 40; the first
//! encoding under the byte limit wins. When none fits, the size is scaled by
//! 0.75 and the encodings tried again, down to 1x1.
//!
//! Like Pi, every image is decoded, even one within the limits (then sent
//! as it is): one that does not decode (cut short, a bad checksum) is
//! reported as "could not be resized" and not attached, since a provider
//! refuses it and, kept in the history, it would fail every later request.

use std::io::Cursor;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::{ColorType, DynamicImage, ImageDecoder, ImageFormat, ImageReader};
use tokio_util::sync::CancellationToken;

use crate::support::truncate::format_size;

/// Widest image sent to a model, in pixels.
pub const MAX_WIDTH: u32 = 2000;
/// Tallest image sent to a model, in pixels.
pub const MAX_HEIGHT: u32 = 2000;
/// Largest image sent to a model, in bytes of base64 (4.5 MiB).
pub const MAX_BASE64_BYTES: usize = 4 * 1024 * 1024 + 512 * 1024;
/// JPEG qualities tried in order, after PNG.
const JPEG_QUALITIES: [u8; 5] = [80, 85, 70, 55, 40];
/// Bytes [`sniff`] needs to recognise every supported format.
pub const SNIFF_LEN: usize = 12;

/// The image formats a model can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageType {
    /// PNG (APNG too: its first frame is an ordinary PNG).
    Png,
    /// JPEG.
    Jpeg,
    /// GIF (a model sees the first frame).
    Gif,
    /// WebP.
    Webp,
}

impl ImageType {
    /// The MIME type, as the model and Pi's texts name it.
    pub fn mime_type(self) -> &'static str {
        match self {
            ImageType::Png => "image/png",
            ImageType::Jpeg => "image/jpeg",
            ImageType::Gif => "image/gif",
            ImageType::Webp => "image/webp",
        }
    }

    fn format(self) -> ImageFormat {
        match self {
            ImageType::Png => ImageFormat::Png,
            ImageType::Jpeg => ImageFormat::Jpeg,
            ImageType::Gif => ImageFormat::Gif,
            ImageType::Webp => ImageFormat::WebP,
        }
    }
}

/// Recognises a supported image by its magic bytes; the file name plays no
/// part (a `.png` holding text is text, a `.txt` holding a PNG is an image).
pub fn sniff(prefix: &[u8]) -> Option<ImageType> {
    if prefix.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageType::Png)
    } else if prefix.starts_with(b"\xff\xd8\xff") {
        Some(ImageType::Jpeg)
    } else if prefix.starts_with(b"GIF8") {
        Some(ImageType::Gif)
    } else if prefix.len() >= 12 && prefix.starts_with(b"RIFF") && &prefix[8..12] == b"WEBP" {
        Some(ImageType::Webp)
    } else {
        None
    }
}

/// An image ready to attach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FittedImage {
    /// The encoded image, base64.
    pub data: String,
    /// Its MIME type (PNG or JPEG when re-encoded).
    pub mime_type: &'static str,
    /// Set when the image was re-encoded to fit.
    pub resized: Option<Resized>,
}

/// The sizes of a re-encoded image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resized {
    /// Width and height of the original, after EXIF orientation.
    pub original: (u32, u32),
    /// Width and height sent.
    pub shown: (u32, u32),
}

impl FittedImage {
    /// `bytes` attached as they are.
    pub fn unchanged(bytes: &[u8], kind: ImageType) -> Self {
        FittedImage {
            data: STANDARD.encode(bytes),
            mime_type: kind.mime_type(),
            resized: None,
        }
    }

    /// Pi's note telling the model how to map coordinates back to the
    /// original; only for a resized image.
    pub fn dimension_note(&self) -> Option<String> {
        let Resized {
            original: (ow, oh),
            shown: (w, h),
        } = self.resized?;
        Some(format!(
            "[Image: original {ow}x{oh}, displayed at {w}x{h}. Multiply coordinates by {} to map to original image.]",
            to_fixed_2(f64::from(ow) / f64::from(w))
        ))
    }
}

/// Says, in `content`, that its images will not reach `model` when it
/// takes none (Pi's note, which `read` gives): the request leaves them
/// out, and the model would otherwise not know a picture was there. Added
/// to the first text, or as a text of its own before the images.
pub fn note_unsent_images(content: &mut Vec<agent_ai::Content>, model: Option<&agent_ai::Model>) {
    use agent_ai::Content;
    const NOTE: &str =
        "[Current model does not support images. The image will be omitted from this request.]";
    let unsent = model.is_some_and(|model| !model.supports_images)
        && content
            .iter()
            .any(|block| matches!(block, Content::Image(_)));
    if !unsent {
        return;
    }
    match content.first_mut() {
        Some(Content::Text(first)) => {
            first.text.push('\n');
            first.text.push_str(NOTE);
        }
        _ => content.insert(0, Content::text(NOTE)),
    }
}

/// The image was not fitted because the call was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", crate::support::cancel::ABORTED)]
pub struct Aborted;

/// The most pixels an image may have to be decoded and scaled down. A
/// larger image, or a small file whose header claims one (a decompression
/// bomb: 1 MB of PNG can say 20000x20000, 1.8 GB decoded), is not decoded,
/// so it cannot exhaust memory; Pi decodes it. Scaling down to 2000x2000
/// holds the original's width by the new height in `f32` RGBA, 16 bytes a
/// pixel: 320 MB for 10000x10000, on top of the decoded image
/// ([`MAX_DECODED_BYTES`]). Measured: 100 megapixels of 8-bit RGB take 650
/// MB, of RGBA 750 MB.
pub const MAX_DECODED_PIXELS: u64 = 100_000_000;

/// The most bytes an image may take decoded (pixels times the bytes of a
/// pixel of its colour type): those of 100 megapixels of 8-bit RGBA. An
/// image of 16 bits per channel may have fewer pixels (50 megapixels of
/// RGBA): 10000x10000 of them took 1.15 GB to scale down.
pub const MAX_DECODED_BYTES: u64 = 4 * MAX_DECODED_PIXELS;

/// The largest image file `read` loads to fit it (it holds the file while
/// it decodes it). Larger files are rare as images: 100 megapixels of JPEG
/// take 20 to 50 MB, a screenshot's PNG far less, and only a photograph's
/// PNG of some 50 megapixels and more gets near it; but a file with an
/// image's first bytes can be of any size (a PNG with 1.5 GB after its end
/// took 1.56 GB). With the decoding limits, a read of an image stays below
/// 900 MB. (An `@file` the user names may be larger: the binary's own
/// limit.)
pub const MAX_IMAGE_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// What the model is told to do with an image read does not take.
const MAKE_A_SMALLER_COPY: &str = "make a smaller copy with bash first (e.g. convert IMAGE \
     -resize 2000x2000 small.png) and read that";

/// Why an image file of `len` bytes, over [`MAX_IMAGE_FILE_BYTES`], is not
/// read, and what to do instead.
pub fn file_too_large_reason(len: u64) -> String {
    let size = |bytes: u64| format_size(usize::try_from(bytes).unwrap_or(usize::MAX));
    format!(
        "the file is {}, more than the {} read loads to scale an image down; {MAKE_A_SMALLER_COPY}",
        size(len),
        size(MAX_IMAGE_FILE_BYTES)
    )
}

/// What became of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fit {
    /// Ready to attach.
    Image(FittedImage),
    /// Too large to decode: more than `max_pixels` pixels, the most its
    /// colour type may have ([`MAX_DECODED_PIXELS`], fewer at 16 bits per
    /// channel to stay within [`MAX_DECODED_BYTES`]).
    TooLarge {
        /// Its width in pixels.
        width: u32,
        /// Its height in pixels.
        height: u32,
        /// The most pixels an image of its colour type may have.
        max_pixels: u64,
    },
    /// It cannot be decoded, or no encoding fits the limits.
    NoFit,
}

impl Fit {
    /// Why a [`Fit::TooLarge`] image is left out, and what to do instead;
    /// `None` for the others.
    pub fn too_large_reason(&self) -> Option<String> {
        let Fit::TooLarge {
            width,
            height,
            max_pixels,
        } = self
        else {
            return None;
        };
        Some(format!(
            "{width}x{height} pixels is more than {}; {MAKE_A_SMALLER_COPY}",
            pixel_limit(*max_pixels, "read scales down")
        ))
    }
}

/// `the 100 megapixels WHAT`, or `the 50 megapixels WHAT at 16 bits per
/// channel` for a limit [`MAX_DECODED_BYTES`] lowered (among the formats
/// read decodes, only 16-bit images take more than 4 bytes a pixel).
pub fn pixel_limit(max_pixels: u64, what: &str) -> String {
    let megapixels = max_pixels / 1_000_000;
    let depth = if max_pixels < MAX_DECODED_PIXELS {
        " at 16 bits per channel"
    } else {
        ""
    };
    format!("the {megapixels} megapixels {what}{depth}")
}

/// The most pixels an image of `colour` may have to be decoded.
fn max_decoded_pixels(colour: ColorType) -> u64 {
    let per_pixel = u64::from(colour.bytes_per_pixel()).max(1);
    MAX_DECODED_PIXELS.min(MAX_DECODED_BYTES / per_pixel)
}

/// Sends `bytes` unchanged when within the limits, else re-encodes them to
/// fit. CPU-heavy: call it off the async runtime.
pub fn fit_image(
    bytes: &[u8],
    kind: ImageType,
    cancel: &CancellationToken,
) -> Result<Fit, Aborted> {
    let Ok(decoder) = ImageReader::with_format(Cursor::new(bytes), kind.format()).into_decoder()
    else {
        return Ok(Fit::NoFit);
    };
    let (width, height) = decoder.dimensions();
    let base64_len = base64::encoded_len(bytes.len(), true).unwrap_or(usize::MAX);
    if width <= MAX_WIDTH && height <= MAX_HEIGHT && base64_len < MAX_BASE64_BYTES {
        // Decoded once to be sure it is whole: a cut or corrupt image that
        // reached the model's provider is refused there ("Could not process
        // image"), and from the history it fails every later request.
        if DynamicImage::from_decoder(decoder).is_err() {
            return Ok(Fit::NoFit);
        }
        return Ok(Fit::Image(FittedImage::unchanged(bytes, kind)));
    }
    let max_pixels = max_decoded_pixels(decoder.color_type());
    if u64::from(width) * u64::from(height) > max_pixels {
        return Ok(Fit::TooLarge {
            width,
            height,
            max_pixels,
        });
    }
    let Some(image) = decode_upright(decoder) else {
        return Ok(Fit::NoFit);
    };
    let original = (image.width(), image.height());
    let (mut w, mut h) = fit_within(original, (MAX_WIDTH, MAX_HEIGHT));
    loop {
        if cancel.is_cancelled() {
            return Err(Aborted);
        }
        if let Some((data, mime_type)) = smallest_fitting_encoding(&image, (w, h), cancel)? {
            return Ok(Fit::Image(FittedImage {
                data,
                mime_type,
                resized: Some(Resized {
                    original,
                    shown: (w, h),
                }),
            }));
        }
        if (w, h) == (1, 1) {
            return Ok(Fit::NoFit);
        }
        (w, h) = (shrink(w), shrink(h));
    }
}

/// Decodes and applies the EXIF orientation, as Pi does before measuring.
fn decode_upright(mut decoder: impl ImageDecoder) -> Option<DynamicImage> {
    let orientation = decoder.orientation().ok();
    let mut image = DynamicImage::from_decoder(decoder).ok()?;
    if let Some(orientation) = orientation {
        image.apply_orientation(orientation);
    }
    Some(image)
}

/// Scales `(w, h)` down, keeping the aspect ratio, to fit `max`, rounding as
/// Pi's `Math.round` does (halves up).
fn fit_within((mut w, mut h): (u32, u32), (max_w, max_h): (u32, u32)) -> (u32, u32) {
    let scale = |value: u32, to: u32, from: u32| -> u32 {
        let exact = u64::from(value) * u64::from(to);
        let rounded = (2 * exact + u64::from(from)) / (2 * u64::from(from));
        u32::try_from(rounded).unwrap_or(u32::MAX).max(1)
    };
    if w > max_w {
        h = scale(h, max_w, w);
        w = max_w;
    }
    if h > max_h {
        w = scale(w, max_h, h);
        h = max_h;
    }
    (w, h)
}

/// One step of Pi's shrinking loop: `max(1, floor(x * 0.75))`.
fn shrink(value: u32) -> u32 {
    (value / 4 * 3 + value % 4 * 3 / 4).max(1)
}

/// The first encoding of `image` at `size` under the byte limit, in Pi's
/// order: PNG, then JPEG at falling qualities.
fn smallest_fitting_encoding(
    image: &DynamicImage,
    (w, h): (u32, u32),
    cancel: &CancellationToken,
) -> Result<Option<(String, &'static str)>, Aborted> {
    let resized;
    let image = if (w, h) == (image.width(), image.height()) {
        image
    } else {
        resized = image.resize_exact(w, h, FilterType::Lanczos3);
        &resized
    };
    // Pi's encoder (photon) works on RGBA; PNG keeps it, JPEG drops alpha.
    let rgba = image.to_rgba8();
    let mut png = Vec::new();
    if rgba.write_with_encoder(PngEncoder::new(&mut png)).is_ok()
        && let Some(data) = within_limit(&png)
    {
        return Ok(Some((data, ImageType::Png.mime_type())));
    }
    let rgb = DynamicImage::ImageRgba8(rgba).to_rgb8();
    for quality in JPEG_QUALITIES {
        if cancel.is_cancelled() {
            return Err(Aborted);
        }
        let mut jpeg = Vec::new();
        if rgb
            .write_with_encoder(JpegEncoder::new_with_quality(&mut jpeg, quality))
            .is_ok()
            && let Some(data) = within_limit(&jpeg)
        {
            return Ok(Some((data, ImageType::Jpeg.mime_type())));
        }
    }
    Ok(None)
}

fn within_limit(encoded: &[u8]) -> Option<String> {
    let len = base64::encoded_len(encoded.len(), true)?;
    (len < MAX_BASE64_BYTES).then(|| STANDARD.encode(encoded))
}

/// JavaScript's `x.toFixed(2)` for a positive ratio: rounds the exact binary
/// value half up (Rust's `{:.2}` rounds exact halves to even: 1.125 -> 1.12,
/// where Pi shows 1.13).
fn to_fixed_2(x: f64) -> String {
    // 60 decimals hold every digit of a double in the range a ratio can take.
    let exact = format!("{x:.60}");
    let Some((whole, fraction)) = exact.split_once('.') else {
        return format!("{x:.2}");
    };
    let digits = fraction.as_bytes();
    let mut hundredths = whole.parse::<u64>().unwrap_or(0) * 100
        + u64::from(digits[0] - b'0') * 10
        + u64::from(digits[1] - b'0');
    if digits[2] >= b'5' {
        hundredths += 1;
    }
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_recognised_by_magic_bytes() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some(ImageType::Png));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0"), Some(ImageType::Jpeg));
        assert_eq!(sniff(b"GIF89a"), Some(ImageType::Gif));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(ImageType::Webp));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(sniff(b"definitely not a png"), None);
    }

    #[test]
    fn ratios_round_half_up_like_javascript() {
        assert_eq!(to_fixed_2(1.5), "1.50");
        assert_eq!(to_fixed_2(1.125), "1.13");
        assert_eq!(to_fixed_2(3000.0 / 2000.0), "1.50");
        assert_eq!(to_fixed_2(4000.0 / 1333.0), "3.00");
        assert_eq!(to_fixed_2(1.0 / 0.75), "1.33");
    }

    #[test]
    fn sizes_fit_the_box_with_pi_rounding() {
        assert_eq!(fit_within((3000, 1000), (2000, 2000)), (2000, 667));
        assert_eq!(fit_within((1000, 3000), (2000, 2000)), (667, 2000));
        assert_eq!(fit_within((5000, 4000), (2000, 2000)), (2000, 1600));
        assert_eq!(fit_within((100, 50), (2000, 2000)), (100, 50));
        assert_eq!(fit_within((100_000, 1), (2000, 2000)), (2000, 1));
    }

    #[test]
    fn shrinking_floors_three_quarters() {
        assert_eq!(shrink(2000), 1500);
        assert_eq!(shrink(667), 500);
        assert_eq!(shrink(7), 5);
        assert_eq!(shrink(1), 1);
    }
}
