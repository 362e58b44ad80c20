//! A command's [`Reply`] through the engine's reply calls. The engine writes each in the
//! client's protocol: under RESP2 a map becomes a flat array, a boolean an integer, and null
//! a null bulk string, as the commands' RESP2 shapes are.

use std::ffi::CString;

use lockfree_cuckoo_commands::Reply;
use valkey_module::raw;

/// Sends `reply` to the client of `ctx`.
pub(crate) fn send(ctx: *mut raw::RedisModuleCtx, reply: &Reply) {
    // A text with a NUL inside cannot be a C string; none of the commands' texts has one.
    let c_text = |text: &str| CString::new(text.replace('\0', " ")).unwrap_or_default();
    // The engine answers every reply call with OK: there is nothing to do with its status.
    let _ = match reply {
        Reply::Ok => raw::reply_with_simple_string(ctx, c"OK".as_ptr()),
        Reply::Status(text) => raw::reply_with_simple_string(ctx, c_text(text).as_ptr()),
        Reply::Int(n) => raw::reply_with_long_long(ctx, *n),
        Reply::Bool(yes) => raw::reply_with_bool(ctx, i32::from(*yes)),
        Reply::Bulk(bytes) => {
            raw::reply_with_string_buffer(ctx, bytes.as_ptr().cast(), bytes.len())
        }
        Reply::Null => raw::reply_with_null(ctx),
        Reply::Array(items) => {
            let status = raw::reply_with_array(ctx, items.len() as _);
            for item in items {
                send(ctx, item);
            }
            status
        }
        Reply::Map(pairs) => {
            let status = raw::reply_with_map(ctx, pairs.len() as _);
            for (name, value) in pairs {
                send(ctx, name);
                send(ctx, value);
            }
            status
        }
        Reply::Error(text) => {
            raw::reply_with_error(ctx, c_text(text).as_ptr());
            raw::Status::Ok
        }
    };
}
