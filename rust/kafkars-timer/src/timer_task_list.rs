//! Task storage for the timing wheel: a slab of entries threaded into
//! intrusive doubly-linked [`TimerTaskList`]s.
//!
//! Kafka links `TimerTaskEntry` objects into `TimerTaskList`s with pointers.
//! Here every entry lives in one `Vec` slot and the lists link slot indices,
//! so insert, unlink (cancel) and re-linking an entry into a lower wheel are
//! O(1) without `unsafe` and without a per-entry allocation.

/// Marks "no slot" in a link field.
pub(crate) const NIL: u32 = u32::MAX;

/// A cancellation handle for a scheduled task.
///
/// The generation makes stale handles harmless: once a task fires or is
/// cancelled its slot may be reused, and the old handle then no longer matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerHandle {
    index: u32,
    generation: u32,
}

impl TimerHandle {
    /// The slab slot, valid right after `insert` (skips the generation check).
    pub(crate) fn slot(self) -> u32 {
        self.index
    }
}

/// One bucket of a timing wheel: a linked list of slab entries sharing one
/// expiration (the start of the bucket's time slot).
#[derive(Debug)]
pub(crate) struct TimerTaskList {
    head: u32,
    tail: u32,
    len: usize,
    /// `None` while the bucket is not armed (not in the bucket queue).
    expiration_ms: Option<u64>,
}

impl TimerTaskList {
    pub(crate) fn new() -> Self {
        Self {
            head: NIL,
            tail: NIL,
            len: 0,
            expiration_ms: None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn expiration_ms(&self) -> Option<u64> {
        self.expiration_ms
    }

    /// Sets the expiration; returns true when it changed, i.e. the bucket must
    /// be (re-)offered to the bucket queue. Repeated adds within one wheel
    /// rotation pass the same value and so never enqueue the bucket twice.
    pub(crate) fn set_expiration(&mut self, expiration_ms: u64) -> bool {
        let changed = self.expiration_ms != Some(expiration_ms);
        self.expiration_ms = Some(expiration_ms);
        changed
    }

    /// Disarms the bucket (after it was taken from the queue).
    pub(crate) fn clear_expiration(&mut self) {
        self.expiration_ms = None;
    }
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    /// `None` marks a free slot; `next` then links the free list.
    task: Option<T>,
    deadline_ms: u64,
    /// Index of the list this entry is linked into, or `NIL`.
    list: u32,
    prev: u32,
    next: u32,
}

/// Arena of scheduled tasks. Lists are owned by the caller and passed in, so
/// the wheel can keep its buckets in its own `Vec` next to the slab.
#[derive(Debug)]
pub(crate) struct TaskSlab<T> {
    slots: Vec<Slot<T>>,
    free_head: u32,
    len: usize,
}

impl<T> TaskSlab<T> {
    pub(crate) fn new() -> Self {
        Self {
            slots: Vec::new(),
            free_head: NIL,
            len: 0,
        }
    }

    /// Number of live tasks.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Stores a task (not yet linked anywhere) and returns its handle.
    pub(crate) fn insert(&mut self, deadline_ms: u64, task: T) -> TimerHandle {
        self.len += 1;
        if self.free_head != NIL {
            let index = self.free_head;
            let slot = &mut self.slots[index as usize];
            self.free_head = slot.next;
            slot.task = Some(task);
            slot.deadline_ms = deadline_ms;
            slot.list = NIL;
            slot.prev = NIL;
            slot.next = NIL;
            return TimerHandle {
                index,
                generation: slot.generation,
            };
        }
        let index = u32::try_from(self.slots.len())
            .ok()
            .filter(|&i| i != NIL)
            .expect("timer slab is full (2^32 - 1 pending tasks)");
        self.slots.push(Slot {
            generation: 0,
            task: Some(task),
            deadline_ms,
            list: NIL,
            prev: NIL,
            next: NIL,
        });
        TimerHandle {
            index,
            generation: 0,
        }
    }

    /// The slot index of a live handle, or `None` if it is stale.
    pub(crate) fn resolve(&self, handle: TimerHandle) -> Option<u32> {
        let slot = self.slots.get(handle.index as usize)?;
        (slot.generation == handle.generation && slot.task.is_some()).then_some(handle.index)
    }

    pub(crate) fn deadline_ms(&self, index: u32) -> u64 {
        self.slots[index as usize].deadline_ms
    }

    /// The list `index` is linked into, or `NIL`.
    pub(crate) fn list_of(&self, index: u32) -> u32 {
        self.slots[index as usize].list
    }

    /// Appends an unlinked entry to `list` (whose id is `list_id`).
    pub(crate) fn push_back(&mut self, list: &mut TimerTaskList, list_id: u32, index: u32) {
        debug_assert_eq!(self.slots[index as usize].list, NIL);
        let old_tail = list.tail;
        {
            let slot = &mut self.slots[index as usize];
            slot.list = list_id;
            slot.prev = old_tail;
            slot.next = NIL;
        }
        if old_tail == NIL {
            list.head = index;
        } else {
            self.slots[old_tail as usize].next = index;
        }
        list.tail = index;
        list.len += 1;
    }

    /// Unlinks an entry from `list`, which must be the list it is in.
    pub(crate) fn unlink(&mut self, list: &mut TimerTaskList, index: u32) {
        let (prev, next) = {
            let slot = &mut self.slots[index as usize];
            let links = (slot.prev, slot.next);
            slot.list = NIL;
            slot.prev = NIL;
            slot.next = NIL;
            links
        };
        if prev == NIL {
            list.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            list.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
        list.len -= 1;
    }

    /// Unlinks and returns the first entry of `list`.
    pub(crate) fn pop_front(&mut self, list: &mut TimerTaskList) -> Option<u32> {
        let head = list.head;
        if head == NIL {
            return None;
        }
        self.unlink(list, head);
        Some(head)
    }

    /// Frees an unlinked entry and returns its task; its handle becomes stale.
    pub(crate) fn remove(&mut self, index: u32) -> T {
        let slot = &mut self.slots[index as usize];
        debug_assert_eq!(slot.list, NIL);
        let task = slot.task.take().expect("removing a free slot");
        slot.generation = slot.generation.wrapping_add(1);
        slot.next = self.free_head;
        self.free_head = index;
        self.len -= 1;
        task
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_unlink_and_reuse() {
        let mut slab = TaskSlab::new();
        let mut list = TimerTaskList::new();
        let handles: Vec<_> = (0..4).map(|i| slab.insert(i, i)).collect();
        for h in &handles {
            let i = slab.resolve(*h).unwrap();
            slab.push_back(&mut list, 7, i);
        }
        assert_eq!(list.len(), 4);
        // Unlink from the middle, then drain in order.
        let mid = slab.resolve(handles[1]).unwrap();
        assert_eq!(slab.list_of(mid), 7);
        slab.unlink(&mut list, mid);
        assert_eq!(slab.remove(mid), 1);
        assert_eq!(
            slab.resolve(handles[1]),
            None,
            "handle is stale after removal"
        );
        let mut drained = vec![];
        while let Some(i) = slab.pop_front(&mut list) {
            drained.push(slab.remove(i));
        }
        assert_eq!(drained, vec![0, 2, 3]);
        assert!(list.is_empty());
        // Freed slots are reused with a new generation.
        let h = slab.insert(9, 9);
        assert!(handles.iter().all(|old| *old != h));
        assert_eq!(slab.len(), 1);
    }
}
