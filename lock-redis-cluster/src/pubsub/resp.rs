//! Just enough RESP2 to read a subscriber connection: the frames a server
//! sends to a client in subscribed mode.
//!
//! (redis-rs has no sharded subscribe on a plain connection, so the cluster's
//! subscriber connections speak the protocol themselves.)

use std::future::Future;
use std::io;
use std::pin::Pin;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// The longest bulk string or array accepted: a subscriber only ever gets
/// channel names and short messages.
const MAX_LEN: i64 = 64 * 1024 * 1024;

/// One RESP2 value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Frame {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Frame>>),
}

impl Frame {
    /// The frame as text, for bulk and simple strings.
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Self::Simple(s) => Some(s),
            Self::Bulk(Some(b)) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }
}

fn invalid(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// Reads one frame.
///
/// # Errors
/// I/O errors; `UnexpectedEof` when the connection closed;
/// `InvalidData` for bytes that are not RESP2.
///
/// # Cancel safety
/// Not cancel safe: a frame half read is lost.
pub(crate) fn read_frame<'a, R>(
    reader: &'a mut R,
) -> Pin<Box<dyn Future<Output = io::Result<Frame>> + Send + 'a>>
where
    R: AsyncBufRead + Unpin + Send,
{
    Box::pin(async move {
        let line = read_line(reader).await?;
        let (&kind, rest) = line.split_first().ok_or_else(|| invalid("empty line"))?;
        let rest = std::str::from_utf8(rest).map_err(|_| invalid("non-UTF-8 header"))?;
        match kind {
            b'+' => Ok(Frame::Simple(rest.to_owned())),
            b'-' => Ok(Frame::Error(rest.to_owned())),
            b':' => Ok(Frame::Int(parse_len(rest)?)),
            b'$' => {
                let len = parse_len(rest)?;
                if len < 0 {
                    return Ok(Frame::Bulk(None));
                }
                let mut data = vec![0; usize::try_from(len).map_err(|_| invalid("length"))? + 2];
                reader.read_exact(&mut data).await?;
                if !data.ends_with(b"\r\n") {
                    return Err(invalid("bulk string without CRLF"));
                }
                data.truncate(data.len() - 2);
                Ok(Frame::Bulk(Some(data)))
            }
            b'*' => {
                let len = parse_len(rest)?;
                if len < 0 {
                    return Ok(Frame::Array(None));
                }
                let mut items = Vec::with_capacity(usize::try_from(len.min(64)).unwrap_or(0));
                for _ in 0..len {
                    items.push(read_frame(reader).await?);
                }
                Ok(Frame::Array(Some(items)))
            }
            other => Err(invalid(format!("unknown RESP type byte {other:#x}"))),
        }
    })
}

fn parse_len(text: &str) -> io::Result<i64> {
    let n: i64 = text
        .parse()
        .map_err(|_| invalid(format!("bad number {text:?}")))?;
    if n > MAX_LEN {
        return Err(invalid(format!("length {n} too large")));
    }
    Ok(n)
}

async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let n = reader.read_until(b'\n', &mut line).await?;
    if n == 0 {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
    }
    if !line.ends_with(b"\r\n") {
        return Err(invalid("line without CRLF"));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parse(bytes: &[u8]) -> io::Result<Frame> {
        let mut reader = tokio::io::BufReader::new(bytes);
        read_frame(&mut reader).await
    }

    #[tokio::test]
    async fn reads_subscriber_frames() {
        let msg = parse(b"*3\r\n$8\r\nsmessage\r\n$4\r\n{a}b\r\n$1\r\n0\r\n")
            .await
            .unwrap();
        assert_eq!(
            msg,
            Frame::Array(Some(vec![
                Frame::Bulk(Some(b"smessage".to_vec())),
                Frame::Bulk(Some(b"{a}b".to_vec())),
                Frame::Bulk(Some(b"0".to_vec())),
            ]))
        );
        assert_eq!(
            parse(b"-MOVED 1 127.0.0.1:7000\r\n").await.unwrap(),
            Frame::Error("MOVED 1 127.0.0.1:7000".into())
        );
        assert_eq!(parse(b":7\r\n").await.unwrap(), Frame::Int(7));
        assert_eq!(parse(b"$-1\r\n").await.unwrap(), Frame::Bulk(None));
        assert_eq!(
            parse(b"+PONG\r\n").await.unwrap(),
            Frame::Simple("PONG".into())
        );
    }

    #[tokio::test]
    async fn rejects_garbage_and_reports_eof() {
        assert_eq!(
            parse(b"").await.unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(
            parse(b"?x\r\n").await.unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        assert_eq!(
            parse(b"$99999999999\r\n").await.unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        assert_eq!(
            parse(b"$3\r\nabcXY").await.unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }
}
