// frames.cpp -- C++20 coroutine frames and their allocation (notebook 07): placeholder,
// filled in by the coroutine-frames experiment.
