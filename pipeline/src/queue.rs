//! The order tasks are served in, highest priority first and, within a
//! priority, newest first: tasks waiting for a fetch slot, and bodies
//! waiting for a decode thread.
//!
//! Plain data: the load actor's fetch scheduler owns one, the decode pool
//! owns its own behind its lock. During a flick the rows on screen now matter more
//! than those that just left, hence newest first (LIFO).

use std::collections::{BTreeMap, HashMap};

use crate::request::{Priority, TaskId};

#[derive(Debug, Default)]
pub(crate) struct TaskQueue {
    /// Served from the back: highest priority, then highest sequence number.
    order: BTreeMap<(Priority, u64), TaskId>,
    position: HashMap<TaskId, (Priority, u64)>,
    next_seq: u64,
}

impl TaskQueue {
    pub(crate) fn push(&mut self, task: TaskId, priority: Priority) {
        self.remove(task);
        self.next_seq += 1;
        let slot = (priority, self.next_seq);
        self.order.insert(slot, task);
        self.position.insert(task, slot);
    }

    /// Removes `task`; returns whether it was queued.
    pub(crate) fn remove(&mut self, task: TaskId) -> bool {
        match self.position.remove(&task) {
            Some(slot) => self.order.remove(&slot).is_some(),
            None => false,
        }
    }

    /// Moves a queued task to `priority`, keeping its age.
    pub(crate) fn reprioritize(&mut self, task: TaskId, priority: Priority) {
        if let Some(slot) = self.position.get_mut(&task)
            && slot.0 != priority
        {
            self.order.remove(slot);
            slot.0 = priority;
            self.order.insert(*slot, task);
        }
    }

    /// Takes the first task in serving order for which `can_start` holds.
    pub(crate) fn pop_next(&mut self, mut can_start: impl FnMut(TaskId) -> bool) -> Option<TaskId> {
        let (&slot, &task) = self
            .order
            .iter()
            .rev()
            .find(|(_, task)| can_start(**task))?;
        self.order.remove(&slot);
        self.position.remove(&task);
        Some(task)
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_before_prefetch_and_newest_first_within_a_priority() {
        let mut queue = TaskQueue::default();
        queue.push(1, Priority::Prefetch);
        queue.push(2, Priority::Visible);
        queue.push(3, Priority::Visible);
        queue.push(4, Priority::Prefetch);
        let order: Vec<_> = std::iter::from_fn(|| queue.pop_next(|_| true)).collect();
        assert_eq!(order, [3, 2, 4, 1]);
    }

    #[test]
    fn removed_and_reprioritized_tasks() {
        let mut queue = TaskQueue::default();
        queue.push(1, Priority::Prefetch);
        queue.push(2, Priority::Prefetch);
        queue.push(3, Priority::Visible);
        assert!(queue.remove(3));
        assert!(!queue.remove(3));
        queue.reprioritize(1, Priority::Visible);
        assert_eq!(queue.pop_next(|_| true), Some(1));
        assert_eq!(queue.len(), 1);
    }

    #[test]
    fn tasks_that_cannot_start_are_skipped_not_lost() {
        let mut queue = TaskQueue::default();
        queue.push(1, Priority::Visible);
        queue.push(2, Priority::Visible);
        assert_eq!(queue.pop_next(|task| task != 2), Some(1));
        assert_eq!(queue.pop_next(|task| task != 2), None);
        assert_eq!(queue.pop_next(|_| true), Some(2));
    }
}
