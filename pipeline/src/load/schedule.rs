//! The fetch scheduler: which queued load fetches next, how many fetches
//! each host has in flight, and how many there are in all.
//!
//! Plain data, owned by the load actor and changed only by it; it ends with
//! the actor. Tasks wait in a [`TaskQueue`] (by priority, newest first) and
//! start while their host has a free slot and fewer than the global limit
//! are in flight; a slot is taken when a fetch starts and given back when
//! it ends or is cancelled. Local files ([`FILES_HOST`]) are a lane of
//! their own, with as many slots as it is given and outside the global
//! limit: a folder of photos never holds up the network, nor the network
//! a folder.

use std::collections::{HashMap, HashSet};

use crate::queue::TaskQueue;
use crate::request::{FILES_HOST, Priority, TaskId};

/// Where a task was when it left the scheduler.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Removed {
    /// Still waiting for a slot.
    Queued,
    /// Fetching: its host's slot is free again.
    InFlight,
    /// Not here (its fetch had already ended).
    Absent,
}

#[derive(Debug)]
pub(crate) struct FetchScheduler {
    queue: TaskQueue,
    /// The host key of every task queued or in flight.
    hosts: HashMap<TaskId, String>,
    /// Fetches in flight per host; hosts with none are absent.
    in_flight: HashMap<String, usize>,
    /// Tasks fetching now.
    fetching: HashSet<TaskId>,
    max_per_host: usize,
    /// Network fetches in flight at most, over every host.
    max_in_flight: usize,
    /// Local file reads in flight at most.
    file_slots: usize,
    /// Of the queued tasks, those of local files.
    queued_files: usize,
}

impl FetchScheduler {
    pub(crate) fn new(max_per_host: usize, max_in_flight: usize, file_slots: usize) -> Self {
        Self {
            queue: TaskQueue::default(),
            hosts: HashMap::new(),
            in_flight: HashMap::new(),
            fetching: HashSet::new(),
            max_per_host,
            max_in_flight,
            file_slots,
            queued_files: 0,
        }
    }

    /// Queues `task`, whose fetch counts against `host`.
    pub(crate) fn push(&mut self, task: TaskId, host: String, priority: Priority) {
        if host == FILES_HOST {
            self.queued_files += 1;
        }
        self.hosts.insert(task, host);
        self.queue.push(task, priority);
    }

    /// Moves a queued task to `priority`, keeping its age.
    pub(crate) fn reprioritize(&mut self, task: TaskId, priority: Priority) {
        self.queue.reprioritize(task, priority);
    }

    /// The next task to fetch, in serving order among those whose host has
    /// a free slot (and, over the network, if the global limit allows one
    /// more); its slot is taken.
    pub(crate) fn next(&mut self) -> Option<TaskId> {
        let (hosts, in_flight) = (&self.hosts, &self.in_flight);
        let count = |host: &str| in_flight.get(host).copied().unwrap_or(0);
        let files = count(FILES_HOST);
        let network_full = self.fetching.len().saturating_sub(files) >= self.max_in_flight;
        // Neither lane can start one: no walk of the queue.
        let network_can = !network_full && self.queue.len() > self.queued_files;
        let files_can = files < self.file_slots && self.queued_files > 0;
        if !network_can && !files_can {
            return None;
        }
        let (max_per_host, file_slots) = (self.max_per_host, self.file_slots);
        let task = self.queue.pop_next(|task| match hosts.get(&task) {
            Some(host) if host == FILES_HOST => files < file_slots,
            Some(host) => !network_full && count(host) < max_per_host,
            None => false,
        })?;
        if let Some(host) = self.hosts.get(&task) {
            *self.in_flight.entry(host.clone()).or_default() += 1;
            if host == FILES_HOST {
                self.queued_files -= 1;
            }
        }
        self.fetching.insert(task);
        Some(task)
    }

    /// Takes `task` out, wherever it is; a fetch's slot is given back.
    /// Call it when a fetch ends and when a task is cancelled.
    pub(crate) fn remove(&mut self, task: TaskId) -> Removed {
        let Some(host) = self.hosts.remove(&task) else {
            return Removed::Absent;
        };
        if !self.fetching.remove(&task) {
            self.queue.remove(task);
            if host == FILES_HOST {
                self.queued_files -= 1;
            }
            return Removed::Queued;
        }
        if let Some(count) = self.in_flight.get_mut(&host) {
            *count -= 1;
            if *count == 0 {
                self.in_flight.remove(&host);
            }
        }
        Removed::InFlight
    }

    /// Fetches and file reads in flight, over every host.
    pub(crate) fn in_flight(&self) -> usize {
        self.fetching.len()
    }

    /// Tasks waiting for a slot.
    pub(crate) fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheduler(max_per_host: usize, tasks: &[(TaskId, &str)]) -> FetchScheduler {
        let mut scheduler = FetchScheduler::new(max_per_host, usize::MAX, 1);
        for &(task, host) in tasks {
            scheduler.push(task, host.into(), Priority::Visible);
        }
        scheduler
    }

    fn drain(scheduler: &mut FetchScheduler) -> Vec<TaskId> {
        std::iter::from_fn(|| scheduler.next()).collect()
    }

    #[test]
    fn a_full_host_waits_while_other_hosts_start() {
        let mut scheduler = scheduler(2, &[(1, "a"), (2, "a"), (3, "a"), (4, "b")]);
        // Newest first: 4 (host b), then a's newest two; 1 waits.
        assert_eq!(drain(&mut scheduler), [4, 3, 2]);
        assert_eq!((scheduler.in_flight(), scheduler.queued()), (3, 1));
        assert_eq!(scheduler.remove(3), Removed::InFlight);
        assert_eq!(drain(&mut scheduler), [1]);
        assert_eq!((scheduler.in_flight(), scheduler.queued()), (3, 0));
    }

    #[test]
    fn removing_a_queued_task_frees_no_slot_and_removing_twice_is_harmless() {
        let mut scheduler = scheduler(1, &[(1, "a"), (2, "a"), (3, "a")]);
        assert_eq!(drain(&mut scheduler), [3]);
        assert_eq!(scheduler.remove(2), Removed::Queued);
        assert_eq!(scheduler.remove(2), Removed::Absent);
        assert!(drain(&mut scheduler).is_empty());
        assert_eq!(scheduler.remove(3), Removed::InFlight);
        assert_eq!(scheduler.remove(3), Removed::Absent);
        assert_eq!(drain(&mut scheduler), [1]);
        assert_eq!(scheduler.remove(1), Removed::InFlight);
        assert_eq!((scheduler.in_flight(), scheduler.queued()), (0, 0));
        assert!(scheduler.in_flight.is_empty() && scheduler.hosts.is_empty());
    }

    #[test]
    fn the_global_limit_holds_over_many_hosts() {
        let hosts: Vec<String> = (0..10).map(|n| format!("host-{n}")).collect();
        let mut scheduler = FetchScheduler::new(2, 3, 1);
        for (task, host) in (1..).zip(&hosts) {
            scheduler.push(task, host.clone(), Priority::Visible);
        }
        assert_eq!(drain(&mut scheduler), [10, 9, 8]);
        assert_eq!((scheduler.in_flight(), scheduler.queued()), (3, 7));
        scheduler.remove(9);
        assert_eq!(drain(&mut scheduler), [7]);
    }

    #[test]
    fn files_are_a_lane_of_their_own() {
        let mut scheduler = FetchScheduler::new(2, 2, 3);
        for task in 1..=4 {
            scheduler.push(task, FILES_HOST.into(), Priority::Visible);
        }
        for task in 5..=8 {
            scheduler.push(task, format!("host-{task}"), Priority::Visible);
        }
        // Two network fetches (the global limit) and three file reads (the
        // lane's slots), each limit apart from the other.
        assert_eq!(drain(&mut scheduler), [8, 7, 4, 3, 2]);
        assert_eq!(scheduler.remove(8), Removed::InFlight);
        assert_eq!(drain(&mut scheduler), [6]);
        assert_eq!(scheduler.remove(3), Removed::InFlight);
        assert_eq!(drain(&mut scheduler), [1]);
        assert_eq!((scheduler.in_flight(), scheduler.queued()), (5, 1));
        // A free file slot and no file queued: the network's queue waits
        // for its own slots.
        assert_eq!(scheduler.remove(1), Removed::InFlight);
        assert_eq!(scheduler.queued_files, 0);
        assert!(drain(&mut scheduler).is_empty());
        assert_eq!(scheduler.remove(7), Removed::InFlight);
        assert_eq!(drain(&mut scheduler), [5]);
        assert_eq!((scheduler.in_flight(), scheduler.queued()), (4, 0));
    }

    #[test]
    fn visible_tasks_start_before_prefetch_ones() {
        let mut scheduler = scheduler(1, &[(1, "a")]);
        scheduler.push(2, "a".into(), Priority::Prefetch);
        scheduler.push(3, "a".into(), Priority::Prefetch);
        scheduler.reprioritize(2, Priority::Visible);
        assert_eq!(drain(&mut scheduler), [2]);
        scheduler.remove(2);
        assert_eq!(drain(&mut scheduler), [1]);
        scheduler.remove(1);
        assert_eq!(drain(&mut scheduler), [3]);
    }
}
