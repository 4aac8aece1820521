//! Message compression: requests are compressed with the encoding the reference is configured
//! with (`grpc-encoding` header plus the per-message compressed flag, as Java's
//! `dubbo.rpc.tri.compressor`); responses are decompressed with the `grpc-encoding` the server
//! chose. Only what we can decode is advertised in `grpc-accept-encoding`; the per-message
//! compressed flag decides whether a message is decompressed at all (a `grpc-encoding: gzip`
//! header with flag 0 is plain).

use std::io::{Read, Write};

use bytes::Bytes;

/// The value we send in `grpc-accept-encoding`.
pub const ACCEPT_ENCODING: &str = "gzip,deflate,identity";

/// A response message encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// No compression (also the meaning of an absent header).
    #[default]
    Identity,
    /// gzip (RFC 1952).
    Gzip,
    /// gRPC's `deflate` (zlib, RFC 1950).
    Deflate,
}

impl Encoding {
    /// The encoding named by a `grpc-encoding` header; `Err` names an unsupported one.
    pub fn from_header(v: Option<&[u8]>) -> Result<Encoding, String> {
        match v {
            None | Some(b"identity") | Some(b"") => Ok(Encoding::Identity),
            Some(b"gzip") => Ok(Encoding::Gzip),
            Some(b"deflate") => Ok(Encoding::Deflate),
            Some(other) => Err(format!(
                "unsupported grpc-encoding {:?}",
                String::from_utf8_lossy(other)
            )),
        }
    }

    /// The encoding named in configuration (`gzip`, `deflate`, `identity`; case-insensitive).
    pub fn from_name(name: &str) -> Result<Encoding, String> {
        Encoding::from_header(Some(name.trim().to_ascii_lowercase().as_bytes()))
    }

    /// The `grpc-encoding` header value.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
        }
    }

    /// Appends `data` compressed with this encoding to `out` (identity copies it).
    pub fn compress_into(self, data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let level = flate2::Compression::fast();
        let r = match self {
            Encoding::Identity => {
                out.extend_from_slice(data);
                return Ok(());
            }
            Encoding::Gzip => {
                let mut e = flate2::write::GzEncoder::new(out, level);
                e.write_all(data).and_then(|_| e.finish().map(drop))
            }
            Encoding::Deflate => {
                let mut e = flate2::write::ZlibEncoder::new(out, level);
                e.write_all(data).and_then(|_| e.finish().map(drop))
            }
        };
        r.map_err(|e| format!("cannot compress message: {e}"))
    }

    /// Decompresses one message whose compressed flag was set, refusing output over `limit`.
    pub fn decompress(self, data: &[u8], limit: usize) -> Result<Bytes, String> {
        let mut out = Vec::new();
        let read = match self {
            Encoding::Identity => {
                return Err(
                    "message has the compressed flag but the response has no grpc-encoding"
                        .to_owned(),
                )
            }
            Encoding::Gzip => flate2::read::GzDecoder::new(data)
                .take(limit as u64 + 1)
                .read_to_end(&mut out),
            Encoding::Deflate => flate2::read::ZlibDecoder::new(data)
                .take(limit as u64 + 1)
                .read_to_end(&mut out),
        };
        read.map_err(|e| format!("cannot decompress message: {e}"))?;
        if out.len() > limit {
            return Err(format!(
                "decompressed message exceeds the limit of {limit} bytes"
            ));
        }
        Ok(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_round_trip_and_limit() {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&[7u8; 1000]).unwrap();
        let z = e.finish().unwrap();
        assert_eq!(Encoding::Gzip.decompress(&z, 1000).unwrap().len(), 1000);
        assert!(Encoding::Gzip.decompress(&z, 999).is_err());
        assert!(Encoding::Gzip.decompress(b"garbage", 10).is_err());
        assert!(Encoding::Identity.decompress(b"x", 10).is_err());
        assert!(Encoding::from_header(Some(b"snappy")).is_err());
    }

    #[test]
    fn compress_round_trips_and_names_parse() {
        for enc in [Encoding::Gzip, Encoding::Deflate, Encoding::Identity] {
            let mut z = Vec::new();
            enc.compress_into(b"hello hello hello", &mut z).unwrap();
            assert_eq!(Encoding::from_name(enc.name()).unwrap(), enc);
            if enc == Encoding::Identity {
                assert_eq!(z, b"hello hello hello");
            } else {
                assert_eq!(&enc.decompress(&z, 100).unwrap()[..], b"hello hello hello");
            }
        }
        assert_eq!(&Encoding::Gzip.name(), &"gzip");
        assert_eq!(Encoding::from_name(" GZIP ").unwrap(), Encoding::Gzip);
        assert!(Encoding::from_name("bzip2").is_err());
    }
}
