//! Response status codes (Dubbo's `org.apache.dubbo.remoting.exchange.Response`).

/// 20: OK.
pub const OK: u8 = 20;
/// 25: the provider's response exceeded its payload limit.
pub const SERIALIZATION_ERROR: u8 = 25;
/// 30: timeout before the request was sent (consumer side).
pub const CLIENT_TIMEOUT: u8 = 30;
/// 31: sent, no response in time (consumer side).
pub const SERVER_TIMEOUT: u8 = 31;
/// 35: the channel closed with the request pending (consumer side).
pub const CHANNEL_INACTIVE: u8 = 35;
/// 40: the provider could not decode the request.
pub const BAD_REQUEST: u8 = 40;
/// 50: the provider could not encode the response.
pub const BAD_RESPONSE: u8 = 50;
/// 60: service not found.
pub const SERVICE_NOT_FOUND: u8 = 60;
/// 70: the provider's handler failed (e.g. "Not found exported service").
pub const SERVICE_ERROR: u8 = 70;
/// 80: server error (the Node peer uses it for everything).
pub const SERVER_ERROR: u8 = 80;
/// 90: the consumer could not decode the response, or it exceeded `payload`.
pub const CLIENT_ERROR: u8 = 90;
/// 100: the provider's thread pool is exhausted.
pub const SERVER_THREADPOOL_EXHAUSTED_ERROR: u8 = 100;

/// The Java name of a status code (`"UNKNOWN"` for others).
pub fn name(status: u8) -> &'static str {
    match status {
        OK => "OK",
        SERIALIZATION_ERROR => "SERIALIZATION_ERROR",
        CLIENT_TIMEOUT => "CLIENT_TIMEOUT",
        SERVER_TIMEOUT => "SERVER_TIMEOUT",
        CHANNEL_INACTIVE => "CHANNEL_INACTIVE",
        BAD_REQUEST => "BAD_REQUEST",
        BAD_RESPONSE => "BAD_RESPONSE",
        SERVICE_NOT_FOUND => "SERVICE_NOT_FOUND",
        SERVICE_ERROR => "SERVICE_ERROR",
        SERVER_ERROR => "SERVER_ERROR",
        CLIENT_ERROR => "CLIENT_ERROR",
        SERVER_THREADPOOL_EXHAUSTED_ERROR => "SERVER_THREADPOOL_EXHAUSTED_ERROR",
        _ => "UNKNOWN",
    }
}
