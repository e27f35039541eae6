"""Line-API widgets: the table and the timeline."""
