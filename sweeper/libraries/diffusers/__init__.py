"""diffusers: a repo is a pipeline of components, each built tiny and checked (``library``); which
components a repo has (``index``); the denoisers, VAEs and ControlNets (``parts``), video and DiT components
(``video``), the text and image encoders (``encoders``)."""
