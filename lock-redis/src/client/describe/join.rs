//! Joins client records (`lock_script::clients`) to a description: each
//! holder, reader, writer and leased permit gets the record of the client
//! that holds it, when that client keeps one. Best effort: a record that
//! cannot be read leaves the description as read.

use lock_script::clients::ClientRecords;

use super::Description;

/// Sets every `client` of `description` from the records under
/// `records`: one read of the named clients' records for a lock, one read
/// of every live record for a permit-expirable semaphore with permits out;
/// no read when nobody holds anything.
pub(super) async fn join(records: &ClientRecords, description: &mut Description) {
    match description {
        Description::Lock(info) | Description::LeanLock(info) => {
            let found = records
                .of_fields(info.holders.iter().map(|h| h.field.as_str()))
                .await;
            found.join_holders(&mut info.holders);
        }
        Description::ReadWriteLock(rw) => {
            let fields = rw
                .writer
                .iter()
                .chain(&rw.readers)
                .map(|h| h.field.as_str());
            let found = records.of_fields(fields).await;
            found.join_holders(rw.writer.iter_mut().chain(rw.readers.iter_mut()));
        }
        Description::PermitExpirableSemaphore(semaphore) if !semaphore.permits.is_empty() => {
            let found = records.all().await;
            for permit in &mut semaphore.permits {
                permit.client = found.of_permit(&permit.id).cloned();
            }
        }
        _ => {}
    }
}
