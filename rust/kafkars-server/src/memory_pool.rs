//! Kafka's `MemoryPool` (`queued.max.request.bytes`): a byte budget shared by every
//! connection for the requests read off sockets and not yet answered. A connection
//! whose next request does not fit waits before reading its body, as Kafka mutes it.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes granted to one request; returned to the pool when dropped.
#[derive(Debug)]
pub(crate) struct MemoryGrant(#[allow(dead_code)] OwnedSemaphorePermit);

#[derive(Clone, Debug)]
pub(crate) struct MemoryPool {
    /// `None`: no limit (`queued.max.request.bytes=-1`, Kafka's default).
    bytes: Option<(Arc<Semaphore>, usize)>,
}

impl MemoryPool {
    pub(crate) fn new(max_bytes: Option<usize>) -> Self {
        // tokio's semaphore holds at most `Semaphore::MAX_PERMITS`.
        let bytes = max_bytes.map(|max| {
            let max = max.clamp(1, Semaphore::MAX_PERMITS);
            (Arc::new(Semaphore::new(max)), max)
        });
        Self { bytes }
    }

    /// Waits until `size` bytes are free. A request larger than the whole pool waits
    /// for the pool to be empty and then takes all of it, so it is never refused here
    /// (`socket.request.max.bytes` is what bounds a single request). Cancellation safe.
    pub(crate) async fn allocate(&self, size: usize) -> Option<MemoryGrant> {
        let (semaphore, max) = self.bytes.as_ref()?;
        let wanted = u32::try_from(size.min(*max)).unwrap_or(u32::MAX);
        Arc::clone(semaphore)
            .acquire_many_owned(wanted)
            .await
            .ok()
            .map(MemoryGrant)
    }

    /// Bytes not granted to any request; `None` without a limit.
    #[cfg(test)]
    fn available(&self) -> Option<usize> {
        self.bytes.as_ref().map(|(s, _)| s.available_permits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn grants_wait_for_released_bytes() {
        let pool = MemoryPool::new(Some(100));
        let a = pool.allocate(60).await.expect("grant");
        assert_eq!(pool.available(), Some(40));
        let blocked =
            tokio::time::timeout(std::time::Duration::from_millis(20), pool.allocate(50)).await;
        assert!(
            blocked.is_err(),
            "50 bytes must wait while only 40 are free"
        );
        drop(a);
        let _b = pool.allocate(50).await.expect("grant after release");
        assert_eq!(pool.available(), Some(50));
    }

    #[tokio::test]
    async fn oversize_request_takes_the_whole_pool() {
        let pool = MemoryPool::new(Some(10));
        let g = pool.allocate(1_000).await.expect("grant");
        assert_eq!(pool.available(), Some(0));
        drop(g);
        assert_eq!(pool.available(), Some(10));
    }

    #[tokio::test]
    async fn unlimited_pool_grants_nothing_to_hold() {
        assert!(MemoryPool::new(None).allocate(1 << 30).await.is_none());
    }
}
